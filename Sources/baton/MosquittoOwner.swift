import BatonSecurity
#if canImport(Glibc)
import Glibc
#endif

/// Who should own the files `baton broker config` writes. mosquitto started as root becomes
/// its own user (`mosquitto`) before it reads its key and ACL, so as root they go to that user;
/// otherwise mosquitto runs as the caller, who keeps them.
struct MosquittoOwner {
    /// The mosquitto user's uid and gid, when running as root and that user exists.
    let user: (uid: uid_t, gid: gid_t)?

    /// Whether the files go to the mosquitto user.
    var isMosquitto: Bool { user != nil }

    static func current() -> MosquittoOwner {
        guard geteuid() == 0, let entry = getpwnam("mosquitto") else { return MosquittoOwner(user: nil) }
        return MosquittoOwner(user: (entry.pointee.pw_uid, entry.pointee.pw_gid))
    }

    /// 0600 for a secret (the key, the ACL) or anything the caller keeps; 0640 for what the
    /// mosquitto user and its group may read.
    func mode(secret: Bool) -> mode_t { secret || !isMosquitto ? 0o600 : 0o640 }

    /// Gives `path` to the mosquitto user (when it is the owner) and sets `mode`.
    func own(_ path: String, mode: mode_t) throws {
        if let user, chown(path, user.uid, user.gid) != 0 {
            throw SecurityError.storage("cannot give \(path) to the mosquitto user: \(String(cString: strerror(errno)))")
        }
        guard chmod(path, mode) == 0 else { throw SecurityError.storage("cannot set the mode of \(path): \(String(cString: strerror(errno)))") }
    }

    /// What to say when the mosquitto user cannot reach `path` through its parents (a folder
    /// under /root, 0700): nil when it can, or when the files are the caller's.
    func unreachableParent(of path: String) -> String? {
        guard let user else { return nil }
        var current = path
        while current != "/" && !current.isEmpty {
            var info = stat()
            if stat(current, &info) == 0 {
                let passes = (info.st_uid == user.uid && info.st_mode & 0o100 != 0)
                    || (info.st_gid == user.gid && info.st_mode & 0o010 != 0) || info.st_mode & 0o001 != 0
                if !passes {
                    return "the mosquitto user cannot reach \(path): \(current) is closed to it; choose a folder it can reach, such as /etc/mosquitto/baton"
                }
            }
            current = String(current[..<(current.lastIndex(of: "/") ?? current.startIndex)])
        }
        return nil
    }
}
