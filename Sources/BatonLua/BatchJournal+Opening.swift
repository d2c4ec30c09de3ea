import BatonCore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Opening a journal: its lock, reading it, cutting a torn tail.
extension BatchJournal {
    /// Opens the journal to read and append; anything but a plain file (a symbolic link is
    /// not followed) is refused.
    static func openJournal(_ path: String) throws -> Int32 {
        let fd = open(path, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw JournalError.io("cannot open the journal \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(fd)
            throw JournalError.refused("\(path) is not a plain file: refused")
        }
        return fd
    }

    /// Takes `folder/journal.lock` and writes who holds it; throws ``JournalError/held(_:path:)``
    /// with the holder its file names when another runner has it.
    static func takeLock(folder: String, path: String, command: String) throws -> Int32 {
        let lockPath = folder + "/journal.lock"
        let fd = open(lockPath, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw JournalError.io("cannot open the journal's lock \(lockPath): \(String(cString: strerror(errno)))") }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            var bytes = [UInt8](repeating: 0, count: 8192)
            let n = pread(fd, &bytes, bytes.count, 0)
            Glibc.close(fd)
            throw JournalError.held(n > 0 ? holder(from: bytes[..<n]) : nil, path: path)
        }
        let text = JSON.object([
            .init("pid", .int(Int64(getpid()))), .init("host", .string(ProcessInfo.processInfo.hostName)),
            .init("started", .string(ISO8601.format(Date()))), .init("command", .string(command)),
        ]).serialized() + "\n"
        ftruncate(fd, 0)
        _ = Array(text.utf8).withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return fd
    }

    static func holder(from bytes: ArraySlice<UInt8>) -> Holder? {
        guard let json = try? JSON.parse(bytes), case .int(let pid)? = json["pid"], let host = json["host"]?.stringValue,
              let started = json["started"]?.stringValue.flatMap(ISO8601.parse)
        else { return nil }
        return Holder(pid: Int32(pid), host: host, started: started, command: json["command"]?.stringValue ?? "")
    }

    /// Cuts what follows the last newline (a record half written when its runner died).
    /// Returns how many bytes were cut.
    @discardableResult
    static func cutTornTail(fd: Int32, path: String) throws -> Int {
        let size = lseek(fd, 0, SEEK_END)
        guard size > 0 else { return 0 }
        var end = size
        var byte: UInt8 = 0
        while end > 0 {
            guard pread(fd, &byte, 1, end - 1) == 1 else { break }
            if byte == 0x0A { break }
            end -= 1
        }
        guard end < size else { return 0 }
        guard ftruncate(fd, end) == 0, fsync(fd) == 0 else {
            throw JournalError.io("cannot cut the torn last line of \(path): \(String(cString: strerror(errno)))")
        }
        return Int(size - end)
    }

    /// Reads the journal: its header, then the start and end records.
    static func read(fd: Int32, path: String, force: Bool) throws -> Contents {
        let cut = try cutTornTail(fd: fd, path: path)
        var data = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        var offset: off_t = 0
        while true {
            let n = pread(fd, &chunk, chunk.count, offset)
            if n < 0 { throw JournalError.io("cannot read the journal \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            data += chunk[..<n]
            offset += off_t(n)
        }
        let lines = data.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast()
        guard let first = lines.first, let header = try? JSON.parse(first), header["kind"]?.stringValue == "batch",
              let id = header["id"]?.stringValue, !id.isEmpty,
              let script = header["script_sha256"]?.stringValue, isDigest(script),
              let input = header["input_sha256"]?.stringValue, isDigest(input)
        else {
            throw JournalError.refused(
                "\(path) has no valid header (its first line must name the batch and its script's and input's SHA-256): "
                    + "refused, as it cannot say which batch it holds; start a new batch with another --journal")
        }
        var contents = Contents(header: header, id: id, cutBytes: cut)
        for (number, line) in lines.enumerated().dropFirst() where !line.isEmpty {
            guard let record = try? JSON.parse(line), let kind = record["kind"]?.stringValue else {
                contents.damagedLines.append(number + 1)
                continue
            }
            guard let key = record["key"]?.stringValue else { continue }
            if kind == "start" { contents.started.insert(key) }
            if kind == "end", let status = record["status"]?.stringValue { contents.ended[key] = status }
        }
        if !contents.damagedLines.isEmpty, !force {
            let shown = contents.damagedLines.prefix(5).map(String.init).joined(separator: ", ")
            throw JournalError.refused(
                "\(path) has \(contents.damagedLines.count) damaged line(s) (line \(shown)): an item's start may be lost, "
                    + "so what is in doubt is not known; give --force to resume anyway, those lines skipped")
        }
        return contents
    }

    static func isDigest(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
