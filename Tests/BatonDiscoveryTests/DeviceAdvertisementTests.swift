import BatonCore
import BatonDiscovery
import Testing

@Suite("Device advertisement (TXT)")
struct DeviceAdvertisementTests {
    static let device = DeviceInfo(
        id: "6f1c2a9e-0d4b-4c8e-9a57-3e2d1f0b7c64", name: "Living Room TV", kind: .tv, platform: .linux,
        model: "X-900", manufacturer: "Example")

    static func service(txt: [DNSTXTEntry], addresses: [MDNSServiceAddress] = [], name: String = "Living Room TV (2)") -> MDNSService {
        MDNSService(
            instanceName: name, fullName: "x._baton._tcp.local.", hostName: "baton-1.local.", port: 47300,
            addresses: addresses, txt: txt, interfaceIndices: [2])
    }

    @Test func everyFieldSurvivesTheRoundTripAndTheNameIsTheInstanceName() throws {
        let txt = DeviceAdvertisement.txt(for: Self.device, account: "ab12cd34", protocolVersion: 1)
        #expect(txt.map(\.description) == [
            "id=6f1c2a9e-0d4b-4c8e-9a57-3e2d1f0b7c64", "kind=tv", "platform=linux", "v=1", "acct=ab12cd34",
            "model=X-900", "mfr=Example",
        ])
        let found = try #require(DeviceAdvertisement.device(from: Self.service(txt: txt)))
        var expected = Self.device
        expected.name = "Living Room TV (2)"
        #expect(found.info == expected)
        #expect(found.account == "ab12cd34")
        #expect(found.protocolVersion == 1)
        #expect(found.transport == .local && found.status == .available && found.sources == [.mdns])
    }

    @Test func emptyAccountModelAndManufacturerAreLeftOut() {
        let bare = DeviceInfo(id: "x", name: "n", kind: .phone, platform: .android)
        #expect(DeviceAdvertisement.txt(for: bare).map(\.key) == ["id", "kind", "platform", "v"])
    }

    @Test func anInstanceWithoutAnIdIsNotADevice() {
        #expect(DeviceAdvertisement.device(from: Self.service(txt: [DNSTXTEntry(key: "kind", text: "tv")!])) == nil)
        #expect(DeviceAdvertisement.device(from: Self.service(txt: [DNSTXTEntry(key: "id", text: "")!])) == nil)
    }

    @Test func unknownKindsPlatformsAndVersionsReadAsUnknownAndOne() throws {
        let txt = [DNSTXTEntry(key: "id", text: "x")!, DNSTXTEntry(key: "kind", text: "toaster")!,
                   DNSTXTEntry(key: "platform", text: "beos")!, DNSTXTEntry(key: "v", text: "many")!]
        let found = try #require(DeviceAdvertisement.device(from: Self.service(txt: txt)))
        #expect(found.info.kind == .unknown && found.info.platform == .unknown && found.protocolVersion == 1)
    }

    @Test func aValueTooLongForOneTXTStringIsCut() {
        var long = Self.device
        long.model = String(repeating: "m", count: 400)
        let model = DeviceAdvertisement.txt(for: long).first { $0.key == "model" }
        #expect(model?.value?.count == 249)
    }

    @Test func routableIPv4ComesFirstAndLinkLocalIPv6LastWithItsInterface() throws {
        let addresses = [
            MDNSServiceAddress(bytes: [0xfe, 0x80] + Array(repeating: 0, count: 13) + [1], interfaceIndex: 3),
            MDNSServiceAddress(bytes: [0xfd, 0] + Array(repeating: 0, count: 13) + [2], interfaceIndex: 3),
            MDNSServiceAddress(bytes: [169, 254, 1, 1], interfaceIndex: 3),
            MDNSServiceAddress(bytes: [192, 168, 1, 20], interfaceIndex: 3),
        ]
        let found = try #require(DeviceAdvertisement.device(from: Self.service(txt: [DNSTXTEntry(key: "id", text: "x")!], addresses: addresses)))
        #expect(found.endpoints.map(\.description) == [
            "192.168.1.20:47300", "[fd00::2]:47300", "169.254.1.1:47300", "[fe80::1%3]:47300",
        ])
    }
}
