import BatonAgent
import BatonClient
import BatonCore
import Foundation
import NIOCore
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Media that lives only on the source: its agent serves it to the target over HTTP, behind a
/// token for that target alone. The target runs in a mount namespace where the media folder
/// is an empty tmpfs, so it truly cannot open the file; its own mpv says what it plays.
@Suite("Media served by the source", .serialized, .timeLimit(.minutes(2)))
struct SharedMediaTests {
    let client = makeClient()

    /// An agent with mpv that cannot see `hidden` (an empty tmpfs over it, in a mount
    /// namespace of its own, which its mpv inherits).
    func blind(_ name: String, to hidden: String) async throws -> PlayerAgent {
        try await PlayerAgent.mpv(name, wrapper: [
            "/usr/bin/unshare", "--mount", "--propagation", "private", "--",
            "/bin/sh", "-c", #"mount -t tmpfs tmpfs "$0" && exec "$@""#, hidden,
        ])
    }

    @Test("a handoff of a file only the source has: the target plays it from the source's URL, at the source's position, by its own mpv")
    func handoffServesTheFile() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Phone")
        let tv = try await blind("Blind TV", to: media.directory.path)
        // The target cannot open the file itself.
        await #expect(throws: PlaybackFailure.self) { _ = try await tv.playback(client, .play(.init(queue: [media.sweep]))) }
        _ = try await phone.playback(client, .play(.init(queue: [media.sweep], position: 14)))
        var options = HandoffOptions()
        options.timeout = .seconds(30)
        let report = await client.handoff(from: phone.target, to: tv.target, options: options)
        #expect(report.status == .success, "\(report.message)")
        let url = try #require(report.servedURL, "\(report.message)")
        #expect(url.hasPrefix("http://127.0.0.1:") && url.contains("/media/") && url.hasSuffix("/sweep.flac"), "\(url)")
        let target = try await tv.mpv().state().get()
        let source = try await phone.mpv().state().get()
        #expect(target.uri == url && !target.paused, "\(target)")
        #expect(source.paused)
        #expect(abs(try #require(report.positionErrorMs)) <= 250, "\(report.message)")
        #expect((target.position ?? 0) >= (source.position ?? 99) - 0.25, "target \(target), source \(source)")
        await phone.stop()
        await tv.stop()
    }

    @Test("what the media server gives: the file, a range, the last bytes, 416 past the end, 404 without the token or after it expires, 403 to another address, 405 for POST")
    func server() async throws {
        let media = try await Media.make()
        let phone = try await PlayerAgent.mpv("Sharing Phone")
        _ = try await phone.playback(client, .play(.init(queue: [media.sweep], position: 1, paused: true)))
        func share(_ uri: String, client address: String = "127.0.0.1", ttl: Double = 60) async throws -> ValueDictionary {
            try await phone.playback(client, .share(.init(uri: uri, client: address, host: "127.0.0.1", ttl: ttl)))
        }
        let url = try #require(try await share(media.sweep).string("url"))
        let file = try Data(contentsOf: URL(fileURLWithPath: media.sweep))

        let whole = try await fetch(url)
        #expect(whole.status == 200 && whole.body == file && whole.headers["Accept-Ranges"] == "bytes")
        let range = try await fetch(url, range: "bytes=100-199")
        #expect(range.status == 206 && range.body == file[100..<200] && range.headers["Content-Range"] == "bytes 100-199/\(file.count)")
        let tail = try await fetch(url, range: "bytes=-10")
        #expect(tail.status == 206 && tail.body == file.suffix(10))
        #expect(try await fetch(url, range: "bytes=\(file.count + 5)-").status == 416)
        let head = try await fetch(url, method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty && head.headers["Content-Length"] == "\(file.count)")
        #expect(try await fetch(url, method: "POST").status == 405)
        let parts = url.split(separator: "/")
        let forged = url.replacingOccurrences(of: String(parts[parts.count - 2]), with: String(repeating: "0", count: 32))
        #expect(try await fetch(forged).status == 404)
        // Offered to another address: this one gets nothing.
        let elsewhere = try #require(try await share(media.sweep, client: "10.9.9.9").string("url"))
        #expect(try await fetch(elsewhere).status == 403)
        // A token ends.
        let brief = try #require(try await share(media.sweep, ttl: 0.5).string("url"))
        #expect(try await fetch(brief).status == 200)
        try await Task.sleep(for: .milliseconds(800))
        #expect(try await fetch(brief).status == 404)
        // Only what the player has loaded can be shared.
        await #expect(throws: PlaybackFailure.badRequest("share: the player has not loaded /etc/passwd; only what it plays can be shared")) {
            _ = try await share("/etc/passwd")
        }
        await phone.stop()
    }

    /// One HTTP request; its status, headers and body.
    func fetch(_ url: String, method: String = "GET", range: String? = nil) async throws -> (status: Int, headers: [String: String], body: Data) {
        var request = URLRequest(url: URL(string: url)!, timeoutInterval: 20)
        request.httpMethod = method
        if let range { request.setValue(range, forHTTPHeaderField: "Range") }
        let (body, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var headers: [String: String] = [:]
        for (key, value) in http.allHeaderFields { headers["\(key)"] = "\(value)" }
        return (http.statusCode, headers, body)
    }
}
