import ArgumentParser

/// How `baton` writes log lines and error reports to standard error.
enum LogFormat: String, ExpressibleByArgument, CaseIterable {
    /// `2026-11-21T10:00:00.123Z INFO  message`, and plain tracebacks.
    case text
    /// One JSON object a line: `{"time":…,"level":"info","message":…}`.
    case json
}
