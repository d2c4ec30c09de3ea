import BatonClient
import BatonCore
import CLuaShim

extension LuaRuntime {
    /// Runs `object[field](arguments...)` as a new task, if the script set that field to a
    /// function (`conn.on_request`, `conn.on_closed`); returns false when it has not.
    @discardableResult
    public func startCallback(
        _ field: String, of object: LuaReference, name: String,
        arguments: (LuaState) -> Int32 = { _ in 0 },
        completion: ((Result<TaskResults, ScriptFailure>) -> Void)? = nil
    ) -> Bool {
        var started = false
        startTask(name: name, push: { lua in
            push(object, on: lua)
            lua.rawGet(-1, field: field)
            baton_remove(lua.pointer, -2)
            guard lua.type(at: -1) == .function else { return nil }
            started = true
            return arguments(lua)
        }, completion: completion)
        return started
    }

    /// The reply a service handler's results make: a table is the message; `nil, status`
    /// answers that status (`failure` if it names none, or names success); returning nothing
    /// answers `success` with an empty message; an error answers `failure` with its message;
    /// a task stopped at its deadline answers `unknown`, saying it timed out.
    /// `handler` names it in details (`the provider of echo`).
    public func serviceReply(from result: Result<TaskResults, ScriptFailure>, handler: @autoclosure () -> String) -> ServiceReply {
        switch result {
        case .failure(let failure) where failure.isTimeout:
            // As the connection answers a request that is not answered by its deadline.
            return ServiceReply(status: .unknown, detail: failure.message)
        case .failure(let failure):
            return ServiceReply(status: .failure, detail: failure.message)
        case .success(let results):
            let lua = results.lua
            guard results.count > 0 else { return ServiceReply(status: .success, message: [:]) }
            let first = results.index(1)
            switch lua.type(at: first) {
            case .table:
                do {
                    guard case .dictionary(let d) = try value(at: first, on: lua, root: "response") else {
                        return ServiceReply(status: .failure, detail: "\(handler()) returned an array, not a message")
                    }
                    return ServiceReply(status: .success, message: d)
                } catch {
                    return ServiceReply(status: .failure, detail: "\(handler()) returned a bad message: \(error)")
                }
            case .nil:
                let text = results.count > 1 ? lua.toString(at: results.index(2)) : nil
                let status = text.flatMap(ResponseStatus.init(rawValue:)) ?? .failure
                return ServiceReply(status: status == .success ? .failure : status, detail: text ?? "")
            default:
                return ServiceReply(status: .failure, detail: "\(handler()) returned a \(lua.typeName(at: first)), not a message table")
            }
        }
    }

    /// Pushes `reply, status, detail` as scripts receive them: the message (nil unless the
    /// status is success), the status string, and why.
    public func pushReply(_ reply: ServiceReply, on lua: LuaState) -> Int32 {
        if let message = reply.message, reply.status == .success {
            push(.dictionary(message), on: lua)
        } else {
            lua.pushNil()
        }
        lua.push(reply.status.rawValue)
        lua.push(reply.detail)
        guard let cause = reply.failureCause else { return 3 }
        lua.push(cause.rawValue)
        return 4
    }

    /// The message table at argument `position`: a dictionary, or a Lua error naming the path.
    public func messageArgument(_ call: HostCall, _ position: Int32) throws -> ValueDictionary {
        guard call.lua.type(at: position) == .table else {
            throw call.argumentError(position, "message table expected, got \(call.lua.typeName(at: position))")
        }
        let value: Value
        do { value = try self.value(at: position, on: call.lua) } catch { throw HostError.message("\(error)") }
        guard case .dictionary(let message) = value else {
            throw HostError.message("message: a message is a dictionary (string keys), got an array")
        }
        return message
    }
}
