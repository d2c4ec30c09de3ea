import BatonCore
import BatonLua

/// The fields of one app's `player = {...}`, read for its backend: each reader checks the
/// value's type and range and throws an error that names the app and the field.
public struct PlayerFields: Sendable {
    /// The table as given.
    public let values: ValueDictionary
    /// The app whose player it is.
    public let app: String

    public init(_ values: ValueDictionary, app: String) {
        self.values = values
        self.app = app
    }

    /// An error about this player's configuration, naming the app.
    public func fail(_ text: String) -> any Error {
        HostError.message("app \(app): player: \(text)")
    }

    /// The non-empty string `key`; nil when absent.
    public func string(_ key: String) throws -> String? {
        guard let value = values[key] else { return nil }
        guard case .string(let text) = value, !text.isEmpty else { throw fail("\(key) must be a non-empty string") }
        return text
    }

    /// The list of strings `key`; nil when absent.
    public func strings(_ key: String) throws -> [String]? {
        guard let value = values[key] else { return nil }
        guard case .array(let items) = value else { throw fail("\(key) must be a list of strings") }
        return try items.map { item in
            guard case .string(let text) = item else { throw fail("\(key) must be a list of strings") }
            return text
        }
    }

    /// The number `key`, which must lie in `range`; nil when absent. `what` names its unit in
    /// the error ("seconds").
    public func number(_ key: String, in range: ClosedRange<Double>, what: String = "") throws -> Double? {
        let number: Double
        switch values[key] {
        case nil: return nil
        case .int(let value)?: number = Double(value)
        case .double(let value)?: number = value
        default: number = .nan
        }
        guard range.contains(number) else {
            let unit = what.isEmpty ? "" : " " + what
            throw fail("\(key) must be a number\(unit) from \(range.lowerBound.words) to \(range.upperBound.words)")
        }
        return number
    }

    /// The seconds at `key`: a number above 0 and at most `most`; nil when absent.
    public func seconds(_ key: String, atMost most: Double) throws -> Double? {
        switch values[key] {
        case nil: return nil
        case .int(let seconds)? where 0 < seconds && Double(seconds) <= most: return Double(seconds)
        case .double(let seconds)? where 0 < seconds && seconds <= most: return seconds
        default: throw fail("\(key) must be a number of seconds above 0 and at most \(most.words)")
        }
    }

    /// The `host:port` at `key`, or `fallback` when absent.
    public func endpoint(_ key: String, default fallback: String) throws -> RemoteDevice.Endpoint {
        let text = try string(key) ?? fallback
        guard let endpoint = RemoteDevice.Endpoint(text) else { throw fail("\(key) must be host:port, got \"\(text)\"") }
        return endpoint
    }
}

private extension Double {
    /// 2 for 2.0, 0.5 for 0.5.
    var words: String { rounded() == self ? String(Int(self)) : String(self) }
}
