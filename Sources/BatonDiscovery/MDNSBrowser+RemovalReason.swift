extension MDNSBrowser {
    /// Why an instance was removed.
    public enum RemovalReason: Sendable, Hashable, CustomStringConvertible {
        /// It said goodbye (records with TTL 0, RFC 6762 §10.1), as on a clean shutdown.
        case goodbye
        /// Its records' TTLs ran out without a refresh: it vanished without a word.
        case expired
        /// The interface it was seen on went down or away.
        case interfaceRemoved

        /// `goodbye`, `expired` or `interface removed`.
        public var description: String {
            switch self {
            case .goodbye: "goodbye"
            case .expired: "expired"
            case .interfaceRemoved: "interface removed"
            }
        }
    }
}
