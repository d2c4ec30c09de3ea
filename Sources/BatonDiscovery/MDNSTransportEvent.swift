/// What a transport tells its listeners, always on its event loop.
package enum MDNSTransportEvent: Sendable {
    /// A message arrived and parsed.
    case message(MDNSReceivedMessage)
    /// An interface came up (or gained its first address of a family) and was joined.
    case interfaceAdded(MDNSInterface)
    /// An interface we use changed its addresses.
    case interfaceChanged(MDNSInterface)
    /// An interface went down or away; nothing more is sent or received on it.
    case interfaceRemoved(MDNSInterface)
}
