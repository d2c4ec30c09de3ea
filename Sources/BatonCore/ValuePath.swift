/// Builds and reads the paths that name a place inside a ``Value`` in error messages.
///
/// The syntax is Lua's: the root is a plain name (`message`); a dictionary member whose key
/// is a Lua identifier is `base.key`; any other key is `base["key"]` with the key written as
/// a Lua string literal; an array element is `base[n]` with `n` 1-based.
public enum ValuePath {
    /// The path of member `key` of the dictionary at `base`: `base.key` when `key` is a Lua
    /// identifier (letters, digits, `_`, not starting with a digit, not a Lua keyword),
    /// otherwise `base["key"]` with `"`, `\` and control characters escaped as in Lua.
    public static func member(_ base: String, _ key: String) -> String {
        if isIdentifier(key) { return base + "." + key }
        return base + "[" + luaQuoted(key) + "]"
    }

    /// The path of element `index` (1-based, as Lua counts) of the array at `base`: `base[index]`.
    public static func element(_ base: String, _ index: Int) -> String {
        base + "[" + String(index) + "]"
    }

    /// The last named step of `path` together with any array indices after it, so a message
    /// can say "like items[1]" rather than repeat the whole path.
    ///
    /// `message.items` → `items`; `message` → `message`; `m["a b"]` → `["a b"]`;
    /// `m.items[2]` → `items[2]`; `m[1][2]` → `m[1][2]`.
    public static func lastComponent(_ path: String) -> String {
        let u = Array(path.utf8)
        let n = u.count
        var i = 0
        // The root runs up to the first separator.
        while i < n, u[i] != dot, u[i] != openBracket { i += 1 }
        var nameStart = 0
        while i < n {
            if u[i] == dot {
                nameStart = i + 1
                i += 1
                while i < n, u[i] != dot, u[i] != openBracket { i += 1 }
            } else if u[i] == openBracket, i + 1 < n, u[i + 1] == quote {
                // A quoted key: skip the Lua literal, honouring escapes, so a `]` or `.`
                // inside it is not taken for a separator.
                nameStart = i
                i += 2
                while i < n, u[i] != quote { i += u[i] == backslash ? 2 : 1 }
                i += 1
                if i < n, u[i] == closeBracket { i += 1 }
            } else if u[i] == openBracket {
                // An index belongs to the name before it.
                while i < n, u[i] != closeBracket { i += 1 }
                i += 1
            } else {
                i += 1
            }
        }
        return String(decoding: u[min(nameStart, n)...], as: UTF8.self)
    }

    /// Renders `components` below `root`; errors are rare, so paths are only built for them.
    static func render(_ root: String, _ components: some Sequence<Component>) -> String {
        var path = root
        for component in components {
            switch component {
            case .key(let key): path = member(path, key)
            case .index(let index): path = element(path, index)
            }
        }
        return path
    }

    /// One step below a ``Value`` root, kept while walking and rendered only on error.
    enum Component {
        case key(String)
        /// 1-based.
        case index(Int)
    }

    private static let dot = UInt8(ascii: ".")
    private static let openBracket = UInt8(ascii: "[")
    private static let closeBracket = UInt8(ascii: "]")
    private static let quote = UInt8(ascii: "\"")
    private static let backslash = UInt8(ascii: "\\")

    private static let luaKeywords: Set<String> = [
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
        "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    ]

    private static func isIdentifier(_ key: String) -> Bool {
        var first = true
        for b in key.utf8 {
            let letter = (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
            let digit = b >= 0x30 && b <= 0x39
            guard letter || (digit && !first) else { return false }
            first = false
        }
        // `m.end` would not be valid Lua.
        return !first && !luaKeywords.contains(key)
    }

    /// `s` as a double-quoted Lua string literal.
    static func luaQuoted(_ s: String) -> String {
        var out: [UInt8] = [quote]
        out.reserveCapacity(s.utf8.count + 2)
        for b in s.utf8 {
            switch b {
            case quote: out += [backslash, quote]
            case backslash: out += [backslash, backslash]
            case 0x07: out += [backslash, UInt8(ascii: "a")]
            case 0x08: out += [backslash, UInt8(ascii: "b")]
            case 0x09: out += [backslash, UInt8(ascii: "t")]
            case 0x0A: out += [backslash, UInt8(ascii: "n")]
            case 0x0B: out += [backslash, UInt8(ascii: "v")]
            case 0x0C: out += [backslash, UInt8(ascii: "f")]
            case 0x0D: out += [backslash, UInt8(ascii: "r")]
            case 0..<0x20, 0x7F:
                // Always three digits, so a following digit cannot be read as part of it.
                out += [backslash, 0x30 + b / 100, 0x30 + b / 10 % 10, 0x30 + b % 10]
            default: out.append(b)
            }
        }
        out.append(quote)
        return String(decoding: out, as: UTF8.self)
    }
}
