import BatonCore
import BatonLua
import BatonNet
import BatonWire
import Logging

extension Agent {
    /// As ``serve(channel:message:responder:)`` from the serving loop when Lua runs on another:
    /// the call crosses to the runtime's loop (in a batch with the others of its read), runs
    /// there, stopped at the request's deadline, and comes back with its answer.
    func serveElsewhere(
        channel: AgentConnection.ServiceChannel, provider: LuaReference, message: ServiceMessage, responder: ServiceResponder
    ) {
        let call = ProviderCall(agent: self, channel: channel, provider: provider, message: message, responder: responder)
        responder.context.whenCancelled(tell: call, token: 0)
        providerCalls.post(call)
    }

    /// Runs the provider of a call the serving loop handed over; on the runtime's loop. A plain
    /// message table is written into wire bytes here, so that the serving loop only copies it.
    func start(_ call: ProviderCall) {
        // Given up before it crossed: never started.
        guard !call.cancelled else { return }
        let runtime = self.runtime
        let (message, object) = (call.message, call.channel.conn.object)
        let task = runtime.startTask(
            function: call.provider, name: call.channel.taskName, deadline: call.responder.context.deadline,
            arguments: { lua in
                runtime.push(message, on: lua)
                runtime.push(object, on: lua)
                return 2
            }
        ) { [providerAnswers] result in
            if case .success(let results) = result, results.count > 0, results.lua.type(at: results.index(1)) == .table,
               let members = EncodedMembers(runtime.messageSource(at: results.index(1), on: results.lua)) {
                call.reply = .encoded(members)
            } else {
                call.reply = .reply(runtime.serviceReply(from: result, handler: "the provider of \(call.channel.service)"))
            }
            providerAnswers!.post(call)
        }
        call.started(task)
    }
}

/// A request for a provider, handed from the serving loop to the runtime's and back with its
/// answer: one object a request, which is also the ``LuaWork`` that stops its task if the
/// caller gives up.
final class ProviderCall: LuaWork, @unchecked Sendable {
    /// Strong: the call keeps its agent alive until it is answered.
    let agent: Agent
    let channel: AgentConnection.ServiceChannel
    let provider: LuaReference
    let message: ServiceMessage
    let responder: ServiceResponder
    /// Set on the runtime's loop before the call goes back, read on the serving loop after.
    var reply: Reply?

    /// A provider's answer: `success` with a message already in wire bytes, or any reply.
    enum Reply {
        case encoded(EncodedMembers)
        case reply(ServiceReply)
    }

    init(agent: Agent, channel: AgentConnection.ServiceChannel, provider: LuaReference, message: ServiceMessage, responder: ServiceResponder) {
        self.agent = agent
        self.channel = channel
        self.provider = provider
        self.message = message
        self.responder = responder
        super.init(runtime: agent.runtime, logger: agent.logger)
    }

    /// Sends the answer; on the serving loop.
    func answer() {
        switch reply {
        case .encoded(let members)?: _ = responder.respond(source: members)
        case .reply(let reply)?: responder.respond(reply)
        case nil: break
        }
    }
}
