extension MDNSBrowser {
    /// What a browser reports, in order, on its event loop and through ``MDNSBrowser/events``.
    public enum Event: Sendable, Hashable {
        /// An instance is fully known for the first time (or again after a removal): SRV, TXT
        /// and at least one address.
        case added(MDNSService)
        /// A known instance changed: port, host, TXT, addresses or interfaces.
        case updated(MDNSService)
        /// A known instance is gone, or no longer fully known.
        case removed(instanceName: String, reason: RemovalReason)
        /// The first query's window is over: every instance that answered it has been reported
        /// (sent once per browser). See ``MDNSBrowser/Timing`` for when.
        case enumerationCompleted
    }
}
