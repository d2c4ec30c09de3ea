import BatonNet
import NIOCore
import NIOPosix

/// One connection to a running MPD over its TCP protocol (see
/// ../shared/reference/players.md): commands answered in order, each by its deadline.
/// Everything runs on ``eventLoop``; nothing blocks it.
///
/// MPD answers in the order it was asked and names no request, so a command that misses its
/// deadline leaves the stream out of step: the connection ends then, and every call waiting
/// fails. So does one after a line that is not MPD's protocol.
public final class MPDConnection: ChannelInboundHandler, @unchecked Sendable {
    public typealias InboundIn = ByteBuffer

    /// The loop the connection lives on.
    public let eventLoop: any EventLoop
    /// The protocol version MPD greeted with (`0.23.5`).
    public private(set) var version = ""
    /// Whether the connection is still up.
    public private(set) var isOpen = true
    /// How long a call waits for its answer when it names no timeout of its own. Set on the loop.
    public var callTimeout: TimeAmount = .seconds(2)
    /// Told once, when the connection ends, why. Set on the loop.
    public var onClosed: ((MPDError) -> Void)?

    /// The longest line a connection takes; a longer one is not the player talking.
    public static let maxLineLength = LineBuffer.maxLineLength
    /// The most one answer may hold, in bytes and in lines: an answer that goes past either
    /// (one that never ends with `OK`) ends the connection, and its call fails. 8 MiB is MPD's
    /// own default `max_output_buffer_size`; 100,000 lines hold a queue of some 10,000 songs.
    public static let maxAnswerBytes = 8 << 20
    public static let maxAnswerLines = 100_000

    private var channel: (any Channel)?
    private var lines = LineBuffer()
    private var greeting: EventLoopPromise<Void>?
    /// Calls in the order they were asked, each with the pairs read for it so far; only the first is on the wire.
    private var waiting: [(command: String, promise: EventLoopPromise<[MPDPair]>, timer: Scheduled<Void>?)] = []
    private var answer: [MPDPair] = []
    /// The bytes of the lines of ``answer``, newlines counted.
    private var answerBytes = 0
    private var failure: MPDError?

    private init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Connects to the MPD at `host`:`port` and reads its greeting, within `timeout`.
    public static func connect(host: String, port: Int, on eventLoop: any EventLoop, timeout: TimeAmount = .seconds(2)) -> EventLoopFuture<MPDConnection> {
        let connection = MPDConnection(eventLoop: eventLoop)
        let greeted = eventLoop.makePromise(of: Void.self)
        connection.greeting = greeted
        let timer = eventLoop.scheduleTask(in: timeout) { () -> Void in
            connection.end(.timedOut("MPD at \(host):\(port) did not greet within \(timeout.words)"))
        }
        ClientBootstrap(group: eventLoop)
            .connectTimeout(timeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(connection) }
            }
            .connect(host: host, port: port)
            .whenFailure { error in connection.end(.closed("cannot connect to MPD at \(host):\(port): \(ErrorWords.of(error))")) }
        return greeted.futureResult
            .always { _ in timer.cancel() }
            .map { connection }
    }

    /// Sends `command` (one line, arguments quoted by ``quoted(_:)``) and answers with the
    /// `key: value` pairs MPD gave, in order; fails with ``MPDError/failed(code:command:message:)``
    /// for MPD's `ACK`, ``MPDError/timedOut(_:)`` after `timeout` (nil: ``callTimeout``; the connection ends then), or why
    /// the connection ended.
    public func command(_ command: String, timeout: TimeAmount? = nil) -> EventLoopFuture<[MPDPair]> {
        guard eventLoop.inEventLoop else {
            return eventLoop.flatSubmit { self.command(command, timeout: timeout) }
        }
        guard isOpen, greeting == nil, let channel else {
            return eventLoop.makeFailedFuture(failure ?? MPDError.closed("the connection to MPD is not open"))
        }
        guard !command.contains("\n") else {
            return eventLoop.makeFailedFuture(MPDError.failed(code: 0, command: "", message: "a command is one line"))
        }
        let promise = eventLoop.makePromise(of: [MPDPair].self)
        let timeout = timeout ?? callTimeout
        let timer = eventLoop.scheduleTask(in: timeout) { [self] () -> Void in
            end(.timedOut("MPD did not answer \(command.split(separator: " ").first ?? "") within \(timeout.words)"))
        }
        waiting.append((command, promise, timer))
        // One command on the wire at a time: MPD writes each answer without TCP_NODELAY, so a
        // second answer written before ours acknowledges the first waits for our delayed ACK
        // (40 ms). Asked in turn, each answer is acknowledged by the next command.
        if waiting.count == 1 { channel.writeAndFlush(ByteBuffer(string: command + "\n"), promise: nil) }
        return promise.futureResult
    }

    /// `argument` as MPD reads one: in double quotes, `"` and `\` escaped.
    public static func quoted(_ argument: String) -> String {
        var out = "\""
        for character in argument {
            if character == "\"" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out + "\""
    }

    /// Closes the connection; calls still waiting fail with ``MPDError/closed(_:)``.
    public func close() {
        eventLoop.execute { [self] in end(.closed("the connection to MPD was closed")) }
    }

    // MARK: ChannelInboundHandler

    public func handlerAdded(context: ChannelHandlerContext) {
        channel = context.channel
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        lines.append(&bytes)
        while isOpen, let line = lines.nextLine() {
            handle(String(buffer: line))
        }
        if lines.compactIsOverlong() {
            end(.garbage("MPD sent a line longer than \(Self.maxLineLength) bytes"))
        }
    }

    public func channelInactive(context: ChannelHandlerContext) {
        end(.closed("MPD closed the connection"))
        context.fireChannelInactive()
    }

    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        end(.closed("the connection to MPD failed: \(ErrorWords.of(error))"))
    }

    private func handle(_ line: String) {
        if let greeted = greeting {
            guard line.hasPrefix("OK MPD ") else { return end(.garbage("not MPD's greeting: \(line.prefix(80))")) }
            version = String(line.dropFirst("OK MPD ".count))
            greeting = nil
            return greeted.succeed()
        }
        guard !waiting.isEmpty else { return end(.garbage("MPD said something unasked: \(line.prefix(80))")) }
        if line == "OK" {
            let call = waiting.removeFirst()
            call.timer?.cancel()
            let pairs = answer
            answer = []
            answerBytes = 0
            sendNext()
            return call.promise.succeed(pairs)
        }
        if line.hasPrefix("ACK ") {
            let call = waiting.removeFirst()
            call.timer?.cancel()
            answer = []
            answerBytes = 0
            sendNext()
            return call.promise.fail(MPDError(ack: line))
        }
        guard let colon = line.firstIndex(of: ":"), line[line.index(after: colon)...].hasPrefix(" ") else {
            return end(.garbage("not MPD's protocol: \(line.prefix(80))"))
        }
        answerBytes += line.utf8.count + 1
        guard answer.count < Self.maxAnswerLines, answerBytes <= Self.maxAnswerBytes else {
            let command = waiting.first?.command.split(separator: " ").first ?? ""
            return end(.garbage(
                "MPD's answer to \(command) went past \(Self.maxAnswerLines) lines or \(Self.maxAnswerBytes >> 20) MiB without its OK"))
        }
        answer.append(MPDPair(key: String(line[..<colon]), value: String(line[line.index(colon, offsetBy: 2)...])))
    }

    /// Writes the command now at the head of the queue, if any.
    private func sendNext() {
        guard let next = waiting.first else { return }
        channel?.writeAndFlush(ByteBuffer(string: next.command + "\n"), promise: nil)
    }

    /// The connection is over, for `reason`: every waiting call fails with it, once.
    private func end(_ reason: MPDError) {
        guard isOpen else { return }
        isOpen = false
        failure = reason
        answer = []
        greeting?.fail(reason)
        greeting = nil
        let calls = waiting
        waiting = []
        for call in calls {
            call.timer?.cancel()
            call.promise.fail(reason)
        }
        channel?.close(promise: nil)
        onClosed?(reason)
        onClosed = nil
    }
}

/// One `key: value` line of MPD's answer.
public struct MPDPair: Sendable, Equatable {
    public let key: String
    public let value: String

    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}

extension [MPDPair] {
    /// The value of the first pair named `key`.
    public subscript(key: String) -> String? {
        first { $0.key == key }?.value
    }
}

/// Why a call to MPD has no answer.
public enum MPDError: Error, Sendable, Equatable, CustomStringConvertible {
    /// MPD refused: `ACK [code@index] {command} message`.
    case failed(code: Int, command: String, message: String)
    /// No answer by the call's deadline (the connection is ended: MPD's answers are in order).
    case timedOut(String)
    /// The connection is gone, or could not be made.
    case closed(String)
    /// Something that is not MPD's protocol.
    case garbage(String)

    /// The error of MPD's `ACK [50@0] {add} No such directory` line.
    init(ack line: String) {
        // ACK [code@index] {command} message
        var rest = Substring(line.dropFirst("ACK ".count))
        var code = 0, command = ""
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
            code = Int(rest[rest.index(after: rest.startIndex)..<close].split(separator: "@").first ?? "") ?? 0
            rest = rest[rest.index(after: close)...].drop { $0 == " " }
        }
        if rest.hasPrefix("{"), let close = rest.firstIndex(of: "}") {
            command = String(rest[rest.index(after: rest.startIndex)..<close])
            rest = rest[rest.index(after: close)...].drop { $0 == " " }
        }
        self = .failed(code: code, command: command, message: String(rest))
    }

    public var description: String {
        switch self {
        case .failed(let code, let command, let message): "MPD refused \(command) (\(code)): \(message)"
        case .timedOut(let text), .closed(let text), .garbage(let text): text
        }
    }
}
