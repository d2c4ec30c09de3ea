import BatonCore
import BatonWire
import Testing

@Suite("Statuses and devices on the wire")
struct StatusAndDeviceWireTests {
    @Test(arguments: LaunchStatus.allCases)
    func launchStatusRoundTrips(_ status: LaunchStatus) {
        #expect(LaunchStatus(wire: Baton_V1_LaunchStatus(status)) == status)
    }

    @Test(arguments: OpenStatus.allCases)
    func openStatusRoundTrips(_ status: OpenStatus) {
        #expect(OpenStatus(wire: Baton_V1_OpenStatus(status)) == status)
    }

    @Test(arguments: ResponseStatus.allCases)
    func responseStatusRoundTrips(_ status: ResponseStatus) {
        #expect(ResponseStatus(wire: Baton_V1_ResponseStatus(status)) == status)
    }

    @Test(arguments: ClosedStatus.allCases)
    func closedStatusRoundTrips(_ status: ClosedStatus) {
        #expect(ClosedStatus(wire: Baton_V1_ClosedStatus(status)) == status)
    }

    @Test func statusesMapToTheirProtoNumbers() {
        #expect(Baton_V1_LaunchStatus(.valueSetTooLarge).rawValue == 5)
        #expect(Baton_V1_LaunchStatus(.unknown).rawValue == 0)
        #expect(Baton_V1_OpenStatus(.notAuthorized).rawValue == 7)
        #expect(Baton_V1_ResponseStatus(.messageSizeTooLarge).rawValue == 5)
        #expect(Baton_V1_ResponseStatus(.appServiceConnectionClosed).rawValue == 6)
        #expect(Baton_V1_ClosedStatus(.canceled).rawValue == 2)
        // Every case maps to a different number.
        #expect(Set(LaunchStatus.allCases.map { Baton_V1_LaunchStatus($0).rawValue }).count == LaunchStatus.allCases.count)
        #expect(Set(OpenStatus.allCases.map { Baton_V1_OpenStatus($0).rawValue }).count == OpenStatus.allCases.count)
        #expect(
            Set(ResponseStatus.allCases.map { Baton_V1_ResponseStatus($0).rawValue }).count
                == ResponseStatus.allCases.count)
        #expect(Set(ClosedStatus.allCases.map { Baton_V1_ClosedStatus($0).rawValue }).count == ClosedStatus.allCases.count)
    }

    @Test func unrecognizedStatusesAreUnknown() {
        #expect(LaunchStatus(wire: .UNRECOGNIZED(42)) == .unknown)
        #expect(OpenStatus(wire: .UNRECOGNIZED(42)) == .unknown)
        #expect(ResponseStatus(wire: .UNRECOGNIZED(42)) == .unknown)
        #expect(ClosedStatus(wire: .UNRECOGNIZED(42)) == .unknown)
        #expect(LaunchStatus(wire: .unknown) == .unknown)
    }

    @Test func deviceRoundTrips() {
        for kind in DeviceKind.allCases {
            for platform in Platform.allCases {
                let device = DeviceInfo(
                    id: "3F2504E0-4F89-11D3-9A0C-0305E82C3301", name: "Wohnzimmer", kind: kind, platform: platform,
                    model: "NUC", manufacturer: "Intel")
                #expect(DeviceInfo(wire: Baton_V1_Device(device)) == device)
            }
        }
        let wire = Baton_V1_Device(DeviceInfo(id: "x", name: "n", kind: .tv, platform: .linux))
        #expect(wire.kind == "tv")
        #expect(wire.platform == "linux")
    }

    @Test func unknownDeviceKindAndPlatformAreUnknown() {
        var wire = Baton_V1_Device()
        wire.id = "x"
        wire.kind = "toaster"
        wire.platform = "plan9"
        let device = DeviceInfo(wire: wire)
        #expect(device.kind == .unknown)
        #expect(device.platform == .unknown)
        wire.kind = ""
        wire.platform = ""
        #expect(DeviceInfo(wire: wire).kind == .unknown)
        #expect(DeviceInfo(wire: wire).platform == .unknown)
    }

    @Test func appRoundTrips() throws {
        let app = AppInfo(
            id: "org.example.player", name: "Player", schemes: ["http", "https"], services: ["playback"],
            attributes: ["tier": "living-room", "volume": 0.5], anonymous: true)
        #expect(try AppInfo(wire: Baton_V1_App(app)) == app)
        let bare = AppInfo(id: "org.example.bare", name: "")
        #expect(try AppInfo(wire: Baton_V1_App(bare)) == bare)
        #expect(!Baton_V1_App(bare).hasAttributes)
    }

    @Test func appWithBadAttributesIsRefusedByPath() {
        var wire = Baton_V1_App(AppInfo(id: "a", name: "A"))
        var attributes = Baton_V1_Dictionary(["tags": ["x"]])
        attributes.entries[0].value.arrayValue.elements.append(Baton_V1_Value(.int(1)))
        wire.attributes = attributes
        #expect(throws: ValueError(path: "attributes.tags[2]", reason: "expected string like tags[1], got integer")) {
            try AppInfo(wire: wire)
        }
    }
}
