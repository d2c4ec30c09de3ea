import BatonSecurity
import Foundation
import Testing

@Suite("The trust an agent keeps while it runs")
struct TrustStoreTests {
    @Test func aRevocationWrittenByAnotherCommandAppliesAfterTheNextRefresh() throws {
        try TwoAccounts.with { t in
            let store = try TrustStore(folder: t.home, credentials: t.owner)
            #expect(store.revocationListText == nil)
            #expect(try store.trust.classifyCaller(chain: t.tvChain).authorization == .sameAccount)
            // As `baton account revoke` in another process would.
            _ = try t.owner.revoke("TV", in: t.home)
            // Asking never touches the disk (an event loop asks); a refresh reads the change.
            #expect(try store.trust.classifyCaller(chain: t.tvChain).authorization == .sameAccount)
            store.refresh()
            #expect(throws: SecurityError.refused("the peer's device ID \(t.tv.deviceID) is revoked by this account")) {
                try store.trust.classifyCaller(chain: t.tvChain)
            }
            #expect(store.revocationListText == (try t.home.read("revocations.json")))
            #expect(store.trust.revocations.version == 1)
        }
    }

    @Test func aListThatChangedIntoSomethingBadLeavesTheLastGoodOne() throws {
        try TwoAccounts.with { t in
            _ = try t.owner.revoke("TV", in: t.home)
            let store = try TrustStore(folder: t.home, credentials: t.owner)
            try t.home.write("{}", to: "revocations.json", mode: 0o644)
            store.refresh()
            #expect(store.trust.revocations.version == 1)
            #expect(throws: SecurityError.self) { try store.trust.classifyCaller(chain: t.tvChain) }
        }
    }

    @Test func aPeersListIsTakenOnlyIfNewerAndTheAccounts() throws {
        try TwoAccounts.with { t in
            try withFolder { tvFolder in
                let tv = try DeviceCredentials.install(t.tv, in: tvFolder)
                let store = try TrustStore(folder: tvFolder, credentials: tv)
                _ = try t.owner.exportDevice(named: "Speaker", in: t.home)
                _ = try t.owner.revoke("Speaker", in: t.home)
                let first = try #require(try t.home.read("revocations.json"))
                _ = try t.owner.revoke("Speaker", in: t.home)
                let second = try #require(try t.home.read("revocations.json"))

                #expect(try store.adopt(revocationListText: first))
                #expect(store.trust.revocations.version == 1)
                #expect(try !store.adopt(revocationListText: first))
                #expect(try store.adopt(revocationListText: second))
                #expect(try !store.adopt(revocationListText: first))
                #expect(store.revocationListText == second)
                #expect(try RevocationList.load(from: tvFolder, accountCertificate: tv.accountCertificate).version == 2)

                let tampered = second.replacingOccurrences(of: "version\\\":2", with: "version\\\":3")
                #expect(tampered != second)
                #expect(throws: SecurityError.refused("the revocation list's signature does not check out: changed, or not this account's")) {
                    try store.adopt(revocationListText: tampered)
                }
                _ = try t.stranger.exportDevice(named: "x", in: t.elsewhere)
                _ = try t.stranger.revoke("x", in: t.elsewhere)
                _ = try t.stranger.revoke("x", in: t.elsewhere)
                _ = try t.stranger.revoke("x", in: t.elsewhere)
                let theirs = try #require(try t.elsewhere.read("revocations.json"))
                #expect(throws: SecurityError.refused("the revocation list's signature does not check out: changed, or not this account's")) {
                    try store.adopt(revocationListText: theirs)
                }
                #expect(throws: SecurityError.damaged("not a revocation list")) {
                    try store.adopt(revocationListText: "hello")
                }
                #expect(store.trust.revocations.version == 2)
            }
        }
    }

    @Test func manyThreadsAtOnceSeeOneList() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("baton-security-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let home = ConfigurationFolder(path: path + "/baton")
        let owner = try DeviceCredentials.loadOrCreate(in: home, deviceName: "Laptop")
        _ = try owner.exportDevice(named: "TV", in: home)
        let store = try TrustStore(folder: home, credentials: owner)
        let versions = try await withThrowingTaskGroup(of: Int.self) { group in
            group.addTask {
                _ = try owner.revoke("TV", in: home)
                return -1
            }
            for _ in 0..<16 {
                group.addTask {
                    store.refresh()
                    return store.trust.revocations.version
                }
            }
            return try await group.reduce(into: Set<Int>()) { $0.insert($1) }
        }
        #expect(versions.isSubset(of: [-1, 0, 1]))
        store.refresh()
        #expect(store.trust.revocations.version == 1)
    }
}
