/// The names MQTT 5 gives reason codes (spec §2.4), for log lines and errors.
package enum MQTTReasonCode {
    package static let sessionTakenOver: UInt8 = 0x8E
    package static let disconnectWithWill: UInt8 = 0x04

    package static func describe(_ code: UInt8) -> String {
        let name: String
        switch code {
        case 0x00: name = "success"
        case 0x04: name = "disconnect with will message"
        case 0x10: name = "no matching subscribers"
        case 0x80: name = "unspecified error"
        case 0x81: name = "malformed packet"
        case 0x82: name = "protocol error"
        case 0x83: name = "implementation specific error"
        case 0x84: name = "unsupported protocol version"
        case 0x85: name = "client identifier not valid"
        case 0x86: name = "bad user name or password"
        case 0x87: name = "not authorized"
        case 0x88: name = "server unavailable"
        case 0x89: name = "server busy"
        case 0x8A: name = "banned"
        case 0x8B: name = "server shutting down"
        case 0x8C: name = "bad authentication method"
        case 0x8D: name = "keep alive timeout"
        case 0x8E: name = "session taken over"
        case 0x90: name = "topic name invalid"
        case 0x93: name = "receive maximum exceeded"
        case 0x95: name = "packet too large"
        case 0x97: name = "quota exceeded"
        case 0x99: name = "payload format invalid"
        case 0x9C: name = "use another server"
        case 0x9D: name = "server moved"
        case 0x9F: name = "connection rate exceeded"
        default: name = "reason"
        }
        return "0x" + String(code, radix: 16, uppercase: true).leftPadded(to: 2) + " (\(name))"
    }

    /// CONNACK refusals that retrying soon will not fix.
    package static func isLasting(_ code: UInt8) -> Bool {
        [0x84, 0x85, 0x86, 0x87, 0x8A, 0x8C, 0x9C, 0x9D].contains(code)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
