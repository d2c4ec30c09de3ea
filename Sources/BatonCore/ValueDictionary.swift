/// The members of a ``Value/dictionary(_:)``: unique string keys, kept in insertion order.
///
/// Messages have tens of members, not thousands: a flat array scanned linearly beats hashing
/// every key, and building one from a Lua table (whose keys are unique already) costs one
/// allocation. Equality and hashing ignore order, as a dictionary's should.
public struct ValueDictionary: Sendable, Hashable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    public typealias Element = (key: String, value: Value)

    /// A struct, not a tuple: arrays of tuples are destroyed through the runtime's generic path.
    @usableFromInline struct Member: Sendable, Hashable {
        @usableFromInline var key: String
        @usableFromInline var value: Value
        @usableFromInline init(_ key: String, _ value: Value) {
            self.key = key
            self.value = value
        }
    }

    @usableFromInline var members: [Member]

    /// An empty dictionary.
    public init() { members = [] }

    /// An empty dictionary with room for `capacity` members.
    public init(minimumCapacity capacity: Int) {
        members = []
        members.reserveCapacity(capacity)
    }

    /// A dictionary of `pairs`; for a repeated key the last value wins, in the first one's place.
    public init(_ pairs: some Sequence<(String, Value)>) {
        members = []
        for (k, v) in pairs { self[k] = v }
    }

    /// As ``init(_:)``.
    public init(dictionaryLiteral elements: (String, Value)...) {
        self.init(elements)
    }

    /// A Swift dictionary's members, sorted by key.
    public init(_ dictionary: [String: Value]) {
        members = dictionary.sorted { $0.key < $1.key }.map { Member($0.key, $0.value) }
    }

    @inlinable public var startIndex: Int { members.startIndex }
    @inlinable public var endIndex: Int { members.endIndex }
    @inlinable public subscript(position: Int) -> Element {
        let m = members[position]
        return (m.key, m.value)
    }

    /// The key of the member at `position`, without copying its value.
    @inlinable public func key(at position: Int) -> String { members[position].key }

    /// The keys, in order.
    public var keys: [String] { members.map(\.key) }

    /// The value for `key`; setting nil removes the member, setting a new key appends it.
    public subscript(key: String) -> Value? {
        get { members.first { $0.key == key }?.value }
        set {
            if let i = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[i].value = newValue } else { members.remove(at: i) }
            } else if let newValue {
                members.append(Member(key, newValue))
            }
        }
    }

    /// Appends a member without looking for an existing one: the caller guarantees that `key`
    /// is not there yet (as when copying a Lua table).
    @inlinable
    public mutating func appendUnchecked(_ key: consuming String, _ value: consuming Value) {
        members.append(Member(key, value))
    }

    /// The first key that appears twice, if any: what a decoder must refuse.
    public var firstDuplicateKey: String? {
        if members.count < 2 { return nil }
        var seen = Set<String>(minimumCapacity: members.count)
        for m in members where !seen.insert(m.key).inserted { return m.key }
        return nil
    }

    public static func == (a: ValueDictionary, b: ValueDictionary) -> Bool {
        guard a.members.count == b.members.count else { return false }
        for m in a.members {
            guard let other = b[m.key], other == m.value else { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        // Order-insensitive: combine the members' own hashes commutatively.
        var sum = 0
        for m in members {
            var h = Hasher()
            h.combine(m.key)
            h.combine(m.value)
            sum = sum &+ h.finalize()
        }
        hasher.combine(members.count)
        hasher.combine(sum)
    }
}
