#if canImport(Glibc)
import Glibc
#endif

extension AccountCommand {
    /// Where a private key goes out of the configuration folder, readable by its owner alone.
    enum PrivateOutput {
        /// Writes `text` to the new file `path`, made 0600 and never through a symbolic link:
        /// a temporary file created with O_EXCL (so no one else holds it open) renamed into place.
        static func write(_ text: String, to path: String) throws {
            let temporary = path + ".tmp.\(getpid())"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw PrivateOutputError("cannot write \(temporary): \(String(cString: strerror(errno)))") }
            do {
                try writeAll(text, to: fd, named: temporary)
                fsync(fd)
                close(fd)
            } catch {
                close(fd)
                unlink(temporary)
                throw error
            }
            guard rename(temporary, path) == 0 else {
                let reason = String(cString: strerror(errno))
                unlink(temporary)
                throw PrivateOutputError("cannot write \(path): \(reason)")
            }
        }

        /// Writes `text` to standard output; when that is a regular file (`> tv.baton`), it is
        /// made 0600 first, and nothing is written if it cannot be. A pipe or terminal is the
        /// caller's to keep.
        static func writeStandardOutput(_ text: String) throws {
            var info = stat()
            if fstat(1, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o077 != 0 {
                guard fchmod(1, 0o600) == 0 else {
                    throw PrivateOutputError(
                        "standard output is a file others may read (mode \(String(info.st_mode & 0o777, radix: 8))) and cannot be "
                            + "made 0600 (\(String(cString: strerror(errno)))); nothing written: use --output FILE")
                }
            }
            try writeAll(text, to: 1, named: "standard output")
        }

        private static func writeAll(_ text: String, to fd: Int32, named name: String) throws {
            let bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw PrivateOutputError("cannot write \(name): \(String(cString: strerror(errno)))") }
                offset += n
            }
        }
    }

    struct PrivateOutputError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}
