/// How a Lua table maps onto a message or JSON value.
enum TableShape {
    /// Keys exactly 1...count.
    case array(count: Int)
    /// String keys only (or no keys at all).
    case dictionary
}

extension LuaState {
    /// Classifies the table at `index`: an array if `markedArray` or its keys are exactly 1..n,
    /// a dictionary if every key is a string or it is empty. Otherwise returns why not, in
    /// words a script author can act on.
    func tableShape(at index: Int32, markedArray: Bool) -> Result<TableShape, ShapeError> {
        let t = absolute(index)
        var count = 0, maxInteger: Int64 = 0
        var firstString: String?, firstInteger: Int64?, badKey: String?
        pushNil()
        while next(t) {
            count += 1
            switch type(at: -2) {
            case .string:
                if firstString == nil { firstString = toString(at: -2) }
            case .number where isInteger(at: -2):
                let k = toInteger(at: -2)!
                if firstInteger == nil { firstInteger = k }
                if k < 1 { badKey = badKey ?? "\(k)" } else { maxInteger = max(maxInteger, k) }
            default:
                if badKey == nil { badKey = "\(describe(at: -2)) (\(typeName(at: -2)))" }
            }
            pop()
        }
        if let badKey {
            return .failure(.badKey(badKey))
        }
        if let s = firstString, let i = firstInteger {
            return .failure(.mixedKeys(integer: i, string: s))
        }
        if firstString != nil {
            return markedArray ? .failure(.mixedKeys(integer: 1, string: firstString!)) : .success(.dictionary)
        }
        if count == 0 { return .success(markedArray ? .array(count: 0) : .dictionary) }
        guard maxInteger == Int64(count) else {
            return .failure(.holes(count: count, maxKey: maxInteger))
        }
        return .success(.array(count: count))
    }
}

/// Why a table is neither an array nor a dictionary.
enum ShapeError: Error {
    case badKey(String)
    case mixedKeys(integer: Int64, string: String)
    case holes(count: Int, maxKey: Int64)

    var reason: String {
        switch self {
        case .badKey(let key):
            "key \(key) is not a string: dictionary keys must be strings"
        case .mixedKeys(let i, let s):
            "mixed keys [\(i)] and \"\(s)\": a table is an array (keys 1..n) or a dictionary (string keys), not both"
        case .holes(let count, let maxKey):
            "array has holes: \(count) elements but keys up to \(maxKey); keys must be 1..n"
        }
    }
}
