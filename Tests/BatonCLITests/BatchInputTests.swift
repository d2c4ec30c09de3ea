import Foundation
import Testing

/// `baton batch --input`: what the items are, read from CSV, JSON lines and JSON arrays, and
/// how an input that cannot be read is refused (exit 2, saying where).
@Suite("Batch inputs")
struct BatchInputTests {
    /// A job that writes each item as JSON, one a line, to items.out.
    static let job = """
        function job(item, ctx)
          local f = io.open("items.out", "a") f:write(baton.json.encode(item), "\\n") f:close()
        end
        """

    func items(_ dir: ScriptDirectory) throws -> [[String: Any]] {
        try String(contentsOf: dir.url.appendingPathComponent("items.out"), encoding: .utf8).split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
    }

    @Test("CSV (RFC 4180): quoted commas, doubled quotes, quoted newlines, CRLF, blank lines skipped, short rows padded with empty strings")
    func csv() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.job)
        try dir.write("in.csv", "key,name,note\r\n1,\"a, b\",\"say \"\"hi\"\"\"\r\n\r\n2,\"two\nlines\"\r\n3,c,d")
        let result = try await dir.baton("batch", "job.lua", "--input", "in.csv", "--jobs", "1")
        #expect(result.exitCode == 0, "\(result)")
        let items = try items(dir)
        #expect(items.count == 3, "\(items)")
        #expect(items.first { $0["key"] as? String == "1" }?["name"] as? String == "a, b")
        #expect(items.first { $0["key"] as? String == "1" }?["note"] as? String == "say \"hi\"")
        #expect(items.first { $0["key"] as? String == "2" }?["name"] as? String == "two\nlines")
        #expect(items.first { $0["key"] as? String == "2" }?["note"] as? String == "")
        #expect(items.first { $0["key"] as? String == "3" }?["note"] as? String == "d")
    }

    @Test("JSON lines keep numbers and nesting; blank lines are skipped; a bad line is refused naming its line (exit 2, nothing run)")
    func jsonLines() async throws {
        let dir = try ScriptDirectory()
        try dir.write("job.lua", Self.job)
        try dir.write("in.jsonl", "{\"key\": \"a\", \"n\": 3, \"tags\": [\"x\"]}\n\n  \n{\"key\": \"b\", \"n\": 0.5}\n")
        let result = try await dir.baton("batch", "job.lua", "--input", "in.jsonl")
        #expect(result.exitCode == 0, "\(result)")
        let items = try items(dir).sorted { ($0["key"] as? String ?? "") < ($1["key"] as? String ?? "") }
        #expect(items.count == 2 && items[0]["n"] as? Int == 3 && (items[0]["tags"] as? [String]) == ["x"] && items[1]["n"] as? Double == 0.5, "\(items)")

        try dir.write("bad.jsonl", "{\"key\": \"a\"}\n\n{\"key\": \n")
        let bad = try await dir.baton("batch", "job.lua", "--input", "bad.jsonl")
        #expect(bad.exitCode == 2 && bad.stderr.contains("bad.jsonl:3: not JSON"), "\(bad)")
        try dir.write("bad.json", "[{\"key\": \"a\"},")
        let array = try await dir.baton("batch", "job.lua", "--input", "bad.json")
        #expect(array.exitCode == 2 && array.stderr.contains("bad.json: not a JSON array"), "\(array)")
        let missing = try await dir.baton("batch", "job.lua", "--input", "nothing.json")
        #expect(missing.exitCode == 2 && missing.stderr.contains("cannot read nothing.json"), "\(missing)")
        #expect(try self.items(dir).count == 2, "nothing more ran")
    }
}
