/// Why a JSON text could not be parsed, and where.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 0-based byte offset of the problem in the input (the input's length for a premature end).
    public var offset: Int
    /// 1-based line of the problem; lines end at `\n`.
    public var line: Int
    /// 1-based column of the problem, counted in Unicode scalars from the start of the line.
    public var column: Int
    /// What is wrong, for a human (for example `unexpected character '}'`).
    public var message: String

    /// Creates an error at the given position.
    public init(offset: Int, line: Int, column: Int, message: String) {
        self.offset = offset
        self.line = line
        self.column = column
        self.message = message
    }

    /// `"line <line>, column <column>: <message>"`, the text shown to users.
    public var description: String { "line \(line), column \(column): \(message)" }
}
