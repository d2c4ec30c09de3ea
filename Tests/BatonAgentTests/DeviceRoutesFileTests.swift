import BatonClient
import BatonCore
import BatonSecurity
import Foundation
import Testing

@Suite("Remembered routes (device-routes.json) of every kind")
struct DeviceRoutesFileTests {
    static func folder() throws -> ConfigurationFolder {
        let path = FileManager.default.temporaryDirectory.path + "/baton-routes-tests-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return ConfigurationFolder(path: path)
    }

    @Test("a broker route is written as broker:ID and read back as the entry's account's broker route, beside TCP")
    func brokerRouteRoundTrips() throws {
        let folder = try Self.folder()
        let account = String(repeating: "ab", count: 32)
        let id = "0f0e0d0c-0b0a-4908-8706-050403020100"
        let routes: [DeviceRoute] = [.tcp(DeviceAddress("10.0.0.2:47300")!), .broker(BrokerRoute(account: account, deviceID: id))]
        DeviceRoutes(folder: folder).remember(id, name: "Attic", account: account, routes: routes)
        DeviceRoutes.flush()
        let text = try #require(try folder.read(DeviceRoutes.file))
        #expect(text.contains("\"broker:\(id)\""), "\(text)")
        #expect(DeviceRoutes(folder: folder).entry(for: id)?.routes == routes)
    }

    @Test("a broker route of an entry without an account is skipped, its TCP routes kept")
    func brokerRouteWithoutAccountIsSkipped() throws {
        let folder = try Self.folder()
        try folder.write("""
            {"devices": {"0f0e0d0c-0b0a-4908-8706-050403020100": {"name": "Attic", "account": "", \
            "routes": ["broker:0f0e0d0c-0b0a-4908-8706-050403020100", "10.0.0.2:47300", "broker:"], "seen": 1}}}
            """, to: DeviceRoutes.file)
        let entry = DeviceRoutes(folder: folder).entry(for: "0f0e0d0c-0b0a-4908-8706-050403020100")
        #expect(entry?.routes == [.tcp(DeviceAddress("10.0.0.2:47300")!)])
    }
}
