// JSON (RFC 8259) as BatonCore reads it: scripts' baton.json.decode, --data and job files,
// revocation lists and device files, and MPV's IPC replies all come through JSON.parse.
//
// Checked for every input: parsing never traps; what parses serializes (plain, pretty, sorted)
// to text that parses back to the same document; a document that is a Value converts to JSON
// and back to the same Value.
import BatonCore
import FuzzSupport

fuzz { input in
    guard let json = try? JSON.parse(input) else { return }
    note("\(json)")
    for (pretty, sortKeys) in [(false, false), (true, false), (true, true)] {
        let text = json.serialized(pretty: pretty, sortKeys: sortKeys)
        let again: JSON
        do {
            again = try JSON.parse(text)
        } catch {
            fuzzFailure("serialized(pretty: \(pretty), sortKeys: \(sortKeys)) does not parse: \(error)\n\(text)")
        }
        // Sorting keys reorders members (and a repeated key is already gone): compare sorted.
        let expected = sortKeys ? sorted(json) : json
        guard sorted(again) == sorted(expected), sortKeys || again == json else {
            fuzzFailure("serialized(pretty: \(pretty), sortKeys: \(sortKeys)) reads back differently:\n\(json)\n\(again)")
        }
    }
    guard let value = try? Value(json: json) else { return }
    let back: JSON
    do {
        back = try value.json()
    } catch {
        fuzzFailure("a Value read from JSON has no JSON: \(error)")
    }
    guard let again = try? Value(json: back), again == value else {
        fuzzFailure("Value → JSON → Value changed it:\n\(value)\n\(back)")
    }
}

/// `json` with every object's members in key order (by UTF-8 bytes), for comparisons that
/// ignore order.
func sorted(_ json: JSON) -> JSON {
    switch json {
    case .array(let elements): return .array(elements.map(sorted))
    case .object(let members):
        return .object(members.map { JSON.Member($0.key, sorted($0.value)) }.sorted { Array($0.key.utf8).lexicographicallyPrecedes(Array($1.key.utf8)) })
    default: return json
    }
}
