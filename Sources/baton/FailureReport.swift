import BatonCore
import BatonLua

/// Writes uncaught script errors to standard error: the message, then Lua's traceback; or
/// one JSON object with `--log-format json`, which carries the error's `class`.
enum FailureReport {
    static func write(_ failure: ScriptFailure, format: LogFormat) {
        switch format {
        case .text:
            var text = ""
            if let context = failure.context { text += "error in \(context):\n" }
            text += failure.message + "\n"
            if !failure.traceback.isEmpty { text += failure.traceback + "\n" }
            StandardError.write(text)
        case .json:
            var fields: [(String, String)] = []
            if !failure.traceback.isEmpty { fields.append(("traceback", failure.traceback)) }
            if let context = failure.context { fields.append(("task", context)) }
            let errorClass = failure.errorClass ?? (failure.isTimeout ? .timeout : .script)
            fields.append(("class", errorClass.rawValue))
            StandardError.write(StderrLogHandler.line(
                format: .json, level: "error", message: failure.message, source: "baton", fields: fields))
        }
    }

    /// Writes `message`, an error of `errorClass` (a script's, unless said).
    static func write(message: String, format: LogFormat, errorClass: ErrorClass = .script) {
        var failure = ScriptFailure(message: message, traceback: "", context: nil)
        failure.errorClass = errorClass
        write(failure, format: format)
    }
}
