/// Which account a client expects the agent it dials to belong to.
public enum AgentExpectation: Sendable, Equatable {
    /// This device's own account: the usual case.
    case ownAccount
    /// The account with this fingerprint (discovery's TXT `acct`).
    case account(AccountFingerprint)
    /// Any account, as long as the agent's chain holds together.
    case anyAccount
    /// The account `code` was made for (its fingerprint's first 8 bytes): how a joining device
    /// pins the agent it redeems the code with.
    case invitedBy(InviteCode)
}
