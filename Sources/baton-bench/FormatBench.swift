// JSON and ISO 8601: BatonCore's own reader beside Foundation's, on the same input. They are
// written by hand because Value needs what Foundation's do not give (an integer apart from a
// double, members in order, repeated keys refused); these figures say what that costs or saves.
import BatonCore
import CLuaShim
import Foundation

/// The ~1 KB message of the Lua figures, as JSON.
private let messageJSON = #"""
{"Type":"playback","CreationDate":"2026-11-24T03:37:25.123Z","TargetId":"8e1f1a1c-3d7b-4e55-9d6c-0a1b2c3d4e5f",
"position":83.5,"volume":40,"muted":false,"title":"The Film Title, Part One",
"queue":["https://example.org/a","https://example.org/b","https://example.org/c"],
"tracks":[{"id":1,"lang":"en","kind":"audio"},{"id":2,"lang":"fr","kind":"audio"},{"id":3,"lang":"en","kind":"subtitle"}],
"device":{"name":"Living Room TV","kind":"tv","model":"X-900","caps":["hdr","4k","atmos"]},
"stats":{"bitrate":12000,"dropped":3,"buffered":4.25,"samples":[1,2,3,4,5,6,7,8]},
"chapters":[{"title":"Opening","start":0},{"title":"The Journey","start":612.5},{"title":"The Return","start":2404},{"title":"Credits","start":5520}],
"owner":{"account":"a1b2c3d4e5f6","device":"Phone","app":"org.example.player","session":77},
"note":"Handed over from the phone to the living-room TV by a script, at the position it had reached."}
"""#

/// Best of 7 rounds of `n` calls of `body`, in ns a call.
private func best(_ n: Int, _ body: () -> Void) -> Double {
    var fastest = Double.infinity
    for _ in 0..<7 {
        let start = baton_monotonic_ns()
        for _ in 0..<n { body() }
        fastest = min(fastest, Double(baton_monotonic_ns() - start) / Double(n))
    }
    return fastest
}

/// ns a parse: BatonCore's JSON and Foundation's JSONSerialization of the message; BatonCore's
/// ISO 8601 and Foundation's ISO8601FormatStyle of one timestamp.
func formatFigures() -> (json: Double, foundationJSON: Double, iso: Double, foundationISO: Double) {
    let bytes = Array(messageJSON.utf8), data = Data(messageJSON.utf8)
    guard (try? JSON.parse(bytes)) != nil, (try? JSONSerialization.jsonObject(with: data)) != nil else {
        fatalError("the JSON figure's input does not parse")
    }
    let json = best(20_000) { _ = try? JSON.parse(bytes) }
    let foundationJSON = best(20_000) { _ = try? JSONSerialization.jsonObject(with: data) }
    let stamp = "2026-11-24T03:37:25.123Z"
    let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    guard ISO8601.parse(stamp) == (try? style.parse(stamp)) else { fatalError("the ISO 8601 figure's parsers disagree") }
    let iso = best(200_000) { _ = ISO8601.parse(stamp) }
    let foundationISO = best(200_000) { _ = try? style.parse(stamp) }
    return (json, foundationJSON, iso, foundationISO)
}
