/// Names one listener of a transport, to remove it.
package struct MDNSListenerID: Sendable, Hashable {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }
}
