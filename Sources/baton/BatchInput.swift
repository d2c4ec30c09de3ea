import BatonCore
import Foundation

/// The items of `baton batch --input FILE`: a JSON array, JSON lines (one value a line, blank
/// lines skipped), or CSV with a header (by the `.csv` extension, RFC 4180; every field a
/// string, a missing one empty). Read here, handed to the driver as one JSON array.
enum BatchInput {
    /// Why the input cannot be used, in one line (`items.jsonl:3: not JSON: ...`).
    struct Problem: Error, CustomStringConvertible {
        var description: String
    }

    /// The items of the file at `path`, as the text of a JSON array.
    static func items(path: String) throws(Problem) -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw Problem(description: "cannot read \(path)") }
        let bytes = [UInt8](data)
        if path.lowercased().hasSuffix(".csv") { return try csvItems(bytes, path: path).serialized() }
        if let first = bytes.first(where: { !isSpace($0) }), first == UInt8(ascii: "[") {
            let parsed: JSON
            do {
                parsed = try JSON.parse(bytes)
            } catch {
                throw Problem(description: "\(path): not a JSON array: \(error)")
            }
            guard case .array = parsed else { throw Problem(description: "\(path): not a JSON array") }
            return String(decoding: bytes, as: UTF8.self)
        }
        var lines: [String] = []
        for (number, line) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated()
        where line.contains(where: { !isSpace($0) }) {
            do {
                _ = try JSON.parse(line)
            } catch {
                throw Problem(description: "\(path):\(number + 1): not JSON: \(error)")
            }
            lines.append(String(decoding: line, as: UTF8.self))
        }
        return "[" + lines.joined(separator: ",\n") + "]"
    }

    private static func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }

    /// One object a data row, keyed by the header's names.
    static func csvItems(_ bytes: [UInt8], path: String) throws(Problem) -> JSON {
        let rows = csvRows(bytes)
        guard let header = rows.first else { throw Problem(description: "\(path) has no header line") }
        return .array(rows.dropFirst().map { row in
            .object(header.enumerated().map { column, name in
                JSON.Member(name, .string(column < row.count ? row[column] : ""))
            })
        })
    }

    /// RFC 4180: fields separated by commas, quoted with `"`, `""` inside quotes for a quote;
    /// rows end at LF, CR LF or CR. Empty rows are skipped.
    static func csvRows(_ bytes: [UInt8]) -> [[String]] {
        var rows: [[String]] = [], row: [String] = [], field: [UInt8] = []
        var quoted = false
        var i = 0
        func endField() {
            row.append(String(decoding: field, as: UTF8.self))
            field.removeAll(keepingCapacity: true)
        }
        while i < bytes.count {
            let c = bytes[i]
            if quoted {
                if c == UInt8(ascii: "\""), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "\"") {
                    field.append(c)
                    i += 1
                } else if c == UInt8(ascii: "\"") {
                    quoted = false
                } else {
                    field.append(c)
                }
            } else if c == UInt8(ascii: "\"") {
                quoted = true
            } else if c == UInt8(ascii: ",") {
                endField()
            } else if c == 0x0A || c == 0x0D {
                if c == 0x0D, i + 1 < bytes.count, bytes[i + 1] == 0x0A { i += 1 }
                endField()
                if row.count > 1 || row.first != "" { rows.append(row) }
                row = []
            } else {
                field.append(c)
            }
            i += 1
        }
        if !field.isEmpty || !row.isEmpty {
            endField()
            rows.append(row)
        }
        return rows
    }
}
