import CSystemd

#if canImport(Glibc)
import Glibc
#endif

/// A value read from a D-Bus message, as plain Swift: variants unwrapped, every integer type
/// an `int`, strings, object paths and signatures a `string`, structs an `array`, and a
/// dictionary keyed by strings (or numbers, as their text) a `dictionary`.
enum DBusValue: Sendable, Equatable {
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([DBusValue])
    case dictionary([String: DBusValue])

    var int64Value: Int64? {
        switch self {
        case .int(let value): value
        case .double(let value) where value.isFinite && abs(value) < 9e18: Int64(value)
        default: nil
        }
    }

    var doubleValue: Double? {
        switch self {
        case .double(let value): value
        case .int(let value): Double(value)
        default: nil
        }
    }

    var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    var dictionaryValue: [String: DBusValue]? {
        if case .dictionary(let value) = self { return value }
        return nil
    }

    var arrayValue: [DBusValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

/// An argument of a method call: the few types MPRIS takes.
enum DBusArgument: Sendable, Equatable {
    case string(String)
    case objectPath(String)
    case int64(Int64)
    case double(Double)
    /// A variant holding the argument (`Properties.Set`'s value).
    indirect case variant(DBusArgument)

    /// Its D-Bus signature.
    var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .int64: "x"
        case .double: "d"
        case .variant: "v"
        }
    }
}

/// A message that is not what D-Bus says a message is, or one sd-bus would not build.
struct DBusMessageError: Error, Sendable, CustomStringConvertible {
    let description: String
}

/// The type codes of the D-Bus signature (`y`, `b`, ... ) as sd-bus takes them.
private func code(_ letter: Unicode.Scalar) -> CChar { CChar(bitPattern: UInt8(letter.value)) }

/// Reading and writing messages through sd-bus. Called on the thread that owns the bus only.
enum DBusMessage {
    /// Every value left at the message's current level (a whole message's body, from the start).
    static func readAll(_ message: OpaquePointer) throws -> [DBusValue] {
        var values: [DBusValue] = []
        while let value = try readNext(message) { values.append(value) }
        return values
    }

    /// The next value at the current level, nil at its end.
    private static func readNext(_ message: OpaquePointer) throws -> DBusValue? {
        var type: CChar = 0
        var contentsPointer: UnsafePointer<CChar>?
        let peeked = sd_bus_message_peek_type(message, &type, &contentsPointer)
        guard peeked >= 0 else { throw DBusMessageError(description: "unreadable message (\(-peeked))") }
        guard peeked > 0 else { return nil }
        let contents = contentsPointer.map { String(cString: $0) }
        switch type {
        case code("a"), code("v"), code("r"), code("e"):
            guard let contents else { throw DBusMessageError(description: "a container without its signature") }
            try check(sd_bus_message_enter_container(message, type, contents), "entering a container")
            defer { sd_bus_message_exit_container(message) }
            let inner = try readAll(message)
            switch type {
            case code("v"):
                guard inner.count == 1 else { throw DBusMessageError(description: "a variant of \(inner.count) values") }
                return inner[0]
            case code("a") where contents.hasPrefix("{"):
                var dictionary: [String: DBusValue] = [:]
                for entry in inner {
                    guard case .array(let pair) = entry, pair.count == 2 else { continue }
                    let key: String
                    switch pair[0] {
                    case .string(let text): key = text
                    case .int(let number): key = String(number)
                    case .bool(let flag): key = String(flag)
                    case .double(let number): key = String(number)
                    default: continue
                    }
                    dictionary[key] = pair[1]
                }
                return .dictionary(dictionary)
            default:
                return .array(inner)
            }
        default:
            return try readBasic(message, type)
        }
    }

    private static func readBasic(_ message: OpaquePointer, _ type: CChar) throws -> DBusValue {
        func read<T: BitwiseCopyable>(_ initial: T) throws -> T {
            var value = initial
            let result = withUnsafeMutablePointer(to: &value) { sd_bus_message_read_basic(message, type, UnsafeMutableRawPointer($0)) }
            try check(result, "reading a value")
            return value
        }
        switch type {
        case code("y"): return .int(Int64(try read(UInt8(0))))
        case code("b"): return .bool(try read(Int32(0)) != 0)
        case code("n"): return .int(Int64(try read(Int16(0))))
        case code("q"): return .int(Int64(try read(UInt16(0))))
        case code("i"), code("h"): return .int(Int64(try read(Int32(0))))
        case code("u"): return .int(Int64(try read(UInt32(0))))
        case code("x"): return .int(try read(Int64(0)))
        case code("t"): return .int(Int64(clamping: try read(UInt64(0))))
        case code("d"): return .double(try read(Double(0)))
        case code("s"), code("o"), code("g"):
            var text: UnsafePointer<CChar>?
            try check(sd_bus_message_read_basic(message, type, &text), "reading a string")
            return .string(text.map { String(cString: $0) } ?? "")
        default:
            throw DBusMessageError(description: "a value of unknown type \(Character(Unicode.Scalar(UInt8(bitPattern: type))))")
        }
    }

    /// Appends `argument` to a message being built.
    static func append(_ argument: DBusArgument, to message: OpaquePointer) throws {
        switch argument {
        case .string(let text):
            try text.withCString { try check(sd_bus_message_append_basic(message, code("s"), $0), "appending a string") }
        case .objectPath(let path):
            try path.withCString { try check(sd_bus_message_append_basic(message, code("o"), $0), "appending an object path") }
        case .int64(var number):
            try check(sd_bus_message_append_basic(message, code("x"), &number), "appending an integer")
        case .double(var number):
            try check(sd_bus_message_append_basic(message, code("d"), &number), "appending a number")
        case .variant(let inner):
            try check(sd_bus_message_open_container(message, code("v"), inner.signature), "opening a variant")
            try append(inner, to: message)
            try check(sd_bus_message_close_container(message), "closing a variant")
        }
    }

    private static func check(_ result: Int32, _ what: String) throws {
        guard result >= 0 else {
            throw DBusMessageError(description: "\(what): \(String(cString: strerror(-result)))")
        }
    }
}
