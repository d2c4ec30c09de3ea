#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

extension ConfigurationFolder {
    /// The text of the private key `name`, or nil if there is no such file. A key that group or
    /// others may read or write (any of 0o077) is refused, as OpenSSH refuses one: it may have
    /// been read already, and using it would hide that. The message says the fix.
    public func readKey(_ name: String) throws -> String? {
        try Self.readPrivateFile(file(name))
    }

    /// The text of the file at `path` that holds a private key (a key, or a device file from
    /// `export-device`), or nil if there is none; refused as ``readKey(_:)`` refuses one that
    /// group or others may read or write.
    public static func readPrivateFile(_ path: String) throws -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw SecurityError.storage("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw SecurityError.storage("cannot read \(path): \(String(cString: strerror(errno)))") }
        try checkPrivate(path, mode: info.st_mode)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = Glibc.read(fd, &chunk, chunk.count)
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw SecurityError.storage("cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            bytes += chunk[..<n]
            // A key is a few hundred bytes; a huge file is not one.
            guard bytes.count <= 1 << 20 else { throw SecurityError.damaged("\(path) is too large to be a key") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Refuses a key file whose `mode` lets group or others at it, saying how to fix it.
    static func checkPrivate(_ path: String, mode: mode_t) throws {
        guard mode & 0o077 == 0 else {
            let octal = String(mode & 0o777, radix: 8)
            throw SecurityError.refused(
                "\(path) holds a private key and is open to others (mode \(octal)); refused: it may have been read. "
                    + "If only you could read it, run: chmod 600 \(path)")
        }
    }
}
