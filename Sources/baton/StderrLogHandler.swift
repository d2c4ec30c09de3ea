import BatonCore
import Logging
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes every log record to standard error as one line, in text or JSON.
struct StderrLogHandler: LogHandler {
    var format: LogFormat
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        let fields = merged.sorted { $0.key < $1.key }.map { ($0.key, "\($0.value)") }
        StandardError.write(Self.line(
            format: format, level: Self.name(of: event.level), message: "\(event.message)",
            source: event.source, fields: fields))
    }

    /// `warning` is `warn` in Baton's logs, as in `baton.log.warn`.
    static func name(of level: Logger.Level) -> String {
        switch level {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warn"
        case .error: "error"
        case .critical: "critical"
        }
    }

    /// One line, newline included.
    static func line(format: LogFormat, level: String, message: String, source: String, fields: [(String, String)]) -> String {
        let time = ISO8601.format(Date(), alwaysMilliseconds: true)
        switch format {
        case .text:
            var line = "\(time) \(level.uppercased().padding(toLength: 5)) \(message)"
            for (k, v) in fields { line += " \(k)=\(v)" }
            return line + "\n"
        case .json:
            var members = [
                JSON.Member("time", .string(time)), JSON.Member("level", .string(level)),
                JSON.Member("message", .string(message)), JSON.Member("source", .string(source)),
            ]
            for (k, v) in fields { members.append(JSON.Member(k, .string(v))) }
            return JSON.object(members).serialized() + "\n"
        }
    }
}

extension String {
    fileprivate func padding(toLength n: Int) -> String {
        count >= n ? self : self + String(repeating: " ", count: n - count)
    }
}
