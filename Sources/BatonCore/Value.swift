#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A typed message value: what scripts send and receive.
///
/// Values arriving from the wire may be malformed in ways the type system cannot
/// rule out (mixed arrays, absurd nesting); call ``validate(path:maxDepth:)`` on them.
public enum Value: Sendable, Hashable {
    /// A Unicode string.
    case string(String)
    /// A 64-bit signed integer; distinct from ``double(_:)``.
    case int(Int64)
    /// A 64-bit floating-point number; distinct from ``int(_:)``.
    case double(Double)
    /// A boolean.
    case bool(Bool)
    /// A point in time.
    case date(Date)
    /// A UUID.
    case uuid(UUID)
    /// Raw bytes.
    case bytes([UInt8])
    /// A list whose elements all have the same ``Kind`` once validated.
    case array([Value])
    /// A string-keyed map; the empty string is a valid key.
    case dictionary(ValueDictionary)

    /// The case of a ``Value``, without its payload.
    public enum Kind: String, Sendable, CaseIterable {
        /// ``Value/string(_:)``.
        case string
        /// ``Value/int(_:)``.
        case int
        /// ``Value/double(_:)``.
        case double
        /// ``Value/bool(_:)``.
        case bool
        /// ``Value/date(_:)``.
        case date
        /// ``Value/uuid(_:)``.
        case uuid
        /// ``Value/bytes(_:)``.
        case bytes
        /// ``Value/array(_:)``.
        case array
        /// ``Value/dictionary(_:)``.
        case dictionary

        /// The name a Lua user knows this kind by, for error messages:
        /// `string`, `integer`, `number`, `boolean`, `date`, `uuid`, `bytes`, `array`, `dictionary`.
        public var luaName: String {
            switch self {
            case .string: "string"
            case .int: "integer"
            case .double: "number"
            case .bool: "boolean"
            case .date: "date"
            case .uuid: "uuid"
            case .bytes: "bytes"
            case .array: "array"
            case .dictionary: "dictionary"
            }
        }
    }

    /// The case of this value.
    public var kind: Kind {
        switch self {
        case .string: .string
        case .int: .int
        case .double: .double
        case .bool: .bool
        case .date: .date
        case .uuid: .uuid
        case .bytes: .bytes
        case .array: .array
        case .dictionary: .dictionary
        }
    }
}
