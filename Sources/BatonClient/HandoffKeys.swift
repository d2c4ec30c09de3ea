import BatonCore
import Crypto
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Handoffs by key, so that a retried cron job or batch item does not hand off twice: the
/// report of a handoff that took effect (`success`, or `source_stop_failed`: the target
/// plays either way) is kept in `$XDG_STATE_HOME/baton/handoffs` (else
/// `~/.local/state/baton/handoffs`), one file per key, and a handoff with the same key
/// within the window gets that report back, marked `repeated`, instead of running. A handoff
/// that failed was rolled back, so a retry runs again. Two at once with one key take turns
/// under a kernel lock (`flock`), which a killed process lets go of.
public enum HandoffKeys {
    /// Where the reports are kept.
    public static var folder: String {
        let environment = ProcessInfo.processInfo.environment
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") { return state + "/baton/handoffs" }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.local/state/baton/handoffs"
    }

    /// Runs `handoff` unless one with `key` took effect within `window`, whose report then
    /// answers; waits at most `wait` (and a second) for another holding the key. Keys are
    /// stored hashed. When the folder cannot be used, the handoff runs and says so in its
    /// report's detail.
    static func once(
        key: String, window: Duration, wait: Duration, in folder: String = folder, _ handoff: () async -> HandoffReport
    ) async -> HandoffReport {
        let name = SHA256.hash(data: Data(key.utf8)).map { String(format: "%02x", $0) }.joined()
        let path = folder + "/" + name + ".json"
        guard mkdirs(folder) else {
            var report = await handoff()
            report.key = key
            report.detail += report.detail.isEmpty ? "" : "; "
            report.detail += "key not kept: cannot make \(folder)"
            return report
        }
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            var report = await handoff()
            report.key = key
            return report
        }
        defer { close(fd) }
        let giveUp = Date().addingTimeInterval(wait.inSeconds + 1)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard Date() < giveUp else {
                var report = HandoffReport(status: .timeout, detail: "another handoff with key \(key) is still running")
                report.key = key
                return report
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        defer { flock(fd, LOCK_UN) }
        if var kept = read(fd, key: key), Date().timeIntervalSince1970 - kept.time < window.inSeconds {
            kept.report.repeated = true
            return kept.report
        }
        var report = await handoff()
        report.key = key
        if report.status == .success || report.status == .sourceStopFailed {
            write(fd, key: key, report: report)
        }
        return report
    }

    /// The report kept in `fd`, if it is one for `key`.
    private static func read(_ fd: Int32, key: String) -> (report: HandoffReport, time: Double)? {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        lseek(fd, 0, SEEK_SET)
        while true {
            let n = Glibc.read(fd, &chunk, chunk.count)
            guard n > 0 else { break }
            bytes += chunk[..<n]
        }
        guard !bytes.isEmpty, let json = try? JSON.parse(bytes), case .dictionary(let kept)? = try? Value(json: json),
              kept.string("key") == key, let time = kept.number("time"), case .dictionary(let message)? = kept["report"],
              let report = HandoffReport(message: message)
        else { return nil }
        return (report, time)
    }

    private static func write(_ fd: Int32, key: String, report: HandoffReport) {
        let kept: Value = .dictionary([
            "key": .string(key), "time": .double(Date().timeIntervalSince1970), "report": .dictionary(report.message),
        ])
        guard let text = try? kept.json().serialized() else { return }
        let bytes = Array(text.utf8)
        ftruncate(fd, 0)
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        fsync(fd)
    }

    private static func mkdirs(_ path: String) -> Bool {
        (try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])) != nil
    }
}
