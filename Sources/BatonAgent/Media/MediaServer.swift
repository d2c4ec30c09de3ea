import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// Serves the files of ``MediaOffers`` over plain HTTP/1.1 (a renderer speaks nothing else):
/// `GET` and `HEAD` of `/media/TOKEN/NAME`, with one byte range at a time (players seek with
/// them). Refuses other methods (405), unknown or expired tokens (404), other addresses than
/// the offer's (403) and ranges past the end (416).
final class MediaServer: Sendable {
    let offers: MediaOffers
    let channel: any Channel
    /// The port it listens on.
    var port: Int { channel.localAddress?.port ?? 0 }

    private init(offers: MediaOffers, channel: any Channel) {
        self.offers = offers
        self.channel = channel
    }

    /// Listens on `host`:`port` (0: a free port) on `group`.
    static func start(host: String, port: Int, offers: MediaOffers, on group: any EventLoopGroup, logger: Logger) -> EventLoopFuture<MediaServer> {
        let fileIO = NonBlockingFileIO(threadPool: .singleton)
        return ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(withErrorHandling: true).flatMap {
                    channel.pipeline.addHandler(MediaRequestHandler(offers: offers, fileIO: fileIO, logger: logger))
                }
            }
            .bind(host: host, port: port)
            .map { MediaServer(offers: offers, channel: $0) }
    }

    func close() {
        channel.close(promise: nil)
    }
}

/// One HTTP connection to the ``MediaServer``: a request's head decides the answer; the file
/// goes out as a region of its descriptor (sendfile).
final class MediaRequestHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let offers: MediaOffers
    let fileIO: NonBlockingFileIO
    let logger: Logger
    private var head: HTTPRequestHead?

    init(offers: MediaOffers, fileIO: NonBlockingFileIO, logger: Logger) {
        self.offers = offers
        self.fileIO = fileIO
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request): head = request
        case .body: break
        case .end:
            guard let request = head else { return }
            head = nil
            answer(request, context: context)
        }
    }

    private func answer(_ request: HTTPRequestHead, context: ChannelHandlerContext) {
        guard request.method == .GET || request.method == .HEAD else {
            return respond(.methodNotAllowed, context: context, keepAlive: request.isKeepAlive, extra: [("Allow", "GET, HEAD")])
        }
        let parts = request.uri.split(separator: "?").first?.split(separator: "/") ?? []
        guard parts.count >= 2, parts[0] == "media" else { return respond(.notFound, context: context, keepAlive: request.isKeepAlive) }
        let address = context.channel.remoteAddress?.ipAddress ?? ""
        let offer: MediaOffers.Offer
        switch offers.offer(String(parts[1]), from: address) {
        case .success(let found): offer = found
        case .failure(.unknown): return respond(.notFound, context: context, keepAlive: request.isKeepAlive)
        case .failure(.wrongAddress):
            logger.notice("refused media to an address it was not offered to", metadata: ["address": "\(address)"])
            return respond(.forbidden, context: context, keepAlive: request.isKeepAlive)
        }
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        fileIO.openFile(_deprecatedPath: offer.path, eventLoop: loop).whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case .failure:
                handler.respond(.notFound, context: context, keepAlive: request.isKeepAlive)
            case .success(let (file, region)):
                handler.send(file: file, size: region.endIndex, request: request, context: context)
            }
        }
    }

    private func send(file: NIOFileHandle, size: Int, request: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = HTTPHeaders([("Accept-Ranges", "bytes"), ("Content-Type", Self.contentType(request.uri))])
        let range: ByteRange
        let status: HTTPResponseStatus
        switch ByteRange.parse(request.headers.first(name: "Range"), size: size) {
        case nil:
            range = ByteRange(lower: 0, upper: size)
            status = .ok
        case .success(let asked)?:
            range = asked
            status = .partialContent
            headers.add(name: "Content-Range", value: "bytes \(asked.lower)-\(asked.upper - 1)/\(size)")
        case .failure?:
            try? file.close()
            return respond(.rangeNotSatisfiable, context: context, keepAlive: request.isKeepAlive, extra: [("Content-Range", "bytes */\(size)")])
        }
        headers.add(name: "Content-Length", value: "\(range.count)")
        headers.add(name: "Connection", value: request.isKeepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: request.version, status: status, headers: headers))), promise: nil)
        if request.method == .GET, range.count > 0 {
            let region = FileRegion(fileHandle: file, readerIndex: range.lower, endIndex: range.upper)
            context.write(wrapOutboundOut(.body(.fileRegion(region))), promise: nil)
        }
        let keepAlive = request.isKeepAlive
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            try? file.close()
            if !keepAlive { channel.close(promise: nil) }
        }
    }

    private func respond(_ status: HTTPResponseStatus, context: ChannelHandlerContext, keepAlive: Bool, extra: [(String, String)] = []) {
        var headers = HTTPHeaders(extra)
        headers.add(name: "Content-Length", value: "0")
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }

    /// The media type the name's extension says; players sniff the rest.
    static func contentType(_ uri: String) -> String {
        switch uri.split(separator: ".").last?.lowercased() {
        case "flac": "audio/flac"
        case "mp3": "audio/mpeg"
        case "ogg", "oga": "audio/ogg"
        case "wav": "audio/wav"
        case "m4a", "aac": "audio/mp4"
        case "mp4", "m4v": "video/mp4"
        case "mkv": "video/x-matroska"
        case "webm": "video/webm"
        default: "application/octet-stream"
        }
    }
}
