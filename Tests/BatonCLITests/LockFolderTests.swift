import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A lock folder another user could write to is refused, as OpenSSH's StrictModes refuses
/// one: there, another user could plant a symbolic link as a lock file (and make root write
/// through it) or hold a lock for ever. A symbolic link as a lock file is never followed.
/// These runs exit 2 (usage): the fix is the caller's, waiting (75) would not help.
@Suite("Lock folders", .serialized)
struct LockFolderTests {
    func run(_ dir: ScriptDirectory, locks: String, _ arguments: [String]) async throws -> BatonResult {
        try await BatonProcess.run(arguments, environment: ["BATON_LOCK_DIR": locks], directory: dir.url)
    }

    /// A folder `locks` in `dir` with `mode`, owned by `owner` (nil: as made).
    func makeLocks(_ dir: ScriptDirectory, mode: mode_t, owner: uid_t? = nil) throws -> String {
        let locks = dir.url.appendingPathComponent("locks").path
        try FileManager.default.createDirectory(atPath: locks, withIntermediateDirectories: true)
        #expect(chmod(locks, mode) == 0)
        if let owner { #expect(chown(locks, owner, gid_t(owner)) == 0) }
        return locks
    }

    @Test("BATON_LOCK_DIR writable by others: run --lock, baton.lock and lock status exit 2 naming the folder and the fix; nothing runs")
    func worldWritableFolder() async throws {
        let dir = try ScriptDirectory()
        for mode: mode_t in [0o777, 0o1777, 0o770] {
            let locks = try makeLocks(dir, mode: mode)
            let byFlag = try await run(dir, locks: locks, ["run", "--lock", "nightly", "-e", "print('ran')"])
            #expect(byFlag.exitCode == 2, "\(byFlag)")
            #expect(byFlag.stdout == "", "\(byFlag)")
            #expect(byFlag.stderr.contains("the lock folder \(locks) is writable by others (mode \(String(mode, radix: 8)))"), "\(byFlag)")
            #expect(byFlag.stderr.contains("chmod go-w \(locks)"), "\(byFlag)")
            let inScript = try await run(dir, locks: locks, ["run", "-e", "local l = baton.lock('nightly') print('ran')"])
            #expect(inScript.exitCode == 2, "\(inScript)")
            #expect(inScript.stdout == "", "\(inScript)")
            #expect(inScript.stderr.contains("is writable by others"), "\(inScript)")
            let status = try await run(dir, locks: locks, ["lock", "status"])
            #expect(status.exitCode == 2, "\(status)")
            #expect(status.stderr.contains("the lock folder \(locks) is writable by others"), "\(status)")
            // Nothing was made in it.
            #expect(try FileManager.default.contentsOfDirectory(atPath: locks) == [])
        }
    }

    @Test("lock status with no lock folder yet: no locks, exit 0")
    func noFolderYet() async throws {
        let dir = try ScriptDirectory()
        let locks = dir.url.appendingPathComponent("never-made").path
        let status = try await run(dir, locks: locks, ["lock", "status"])
        #expect(status.exitCode == 0, "\(status)")
        #expect(status.stdout == "no locks in \(locks)\n", "\(status)")
    }

    @Test("a lock folder owned by another user is refused with exit 2, naming its owner")
    func foreignOwner() async throws {
        let dir = try ScriptDirectory()
        let locks = try makeLocks(dir, mode: 0o700, owner: 65534)
        let result = try await run(dir, locks: locks, ["run", "--lock", "nightly", "-e", "print('ran')"])
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.stdout == "", "\(result)")
        #expect(result.stderr.contains("the lock folder \(locks) belongs to uid 65534"), "\(result)")
    }

    @Test("a symbolic link planted as the lock file is refused and not followed: its target is unchanged")
    func plantedSymlink() async throws {
        let dir = try ScriptDirectory()
        let locks = try makeLocks(dir, mode: 0o700)
        let target = dir.url.appendingPathComponent("shadow").path
        try dir.write("shadow", "root:secret\n")
        #expect(chmod(target, 0o600) == 0)
        #expect(symlink(target, locks + "/nightly.lock") == 0)
        let result = try await run(dir, locks: locks, ["run", "--lock", "nightly", "-e", "print('ran')"])
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.stdout == "", "\(result)")
        #expect(result.stderr.contains("\(locks)/nightly.lock is a symbolic link, not a lock file: refused, not followed"), "\(result)")
        let inScript = try await run(dir, locks: locks, ["run", "-e", "local l = baton.lock('nightly') print('ran')"])
        #expect(inScript.exitCode == 2, "\(inScript)")
        #expect(inScript.stdout == "", "\(inScript)")
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "root:secret\n")
        var info = stat()
        #expect(stat(target, &info) == 0 && info.st_mode & 0o777 == 0o600)
        // lock status reads nothing through it either.
        let status = try await run(dir, locks: locks, ["lock", "status", "nightly"])
        #expect(status.exitCode == 0, "\(status)")
        #expect(status.stdout == "nightly: free\n", "\(status)")
        // Once it is gone, the lock works.
        #expect(unlink(locks + "/nightly.lock") == 0)
        let after = try await run(dir, locks: locks, ["run", "--lock", "nightly", "-e", "print('ran')"])
        #expect(after.exitCode == 0, "\(after)")
        #expect(after.stdout == "ran\n", "\(after)")
    }
}
