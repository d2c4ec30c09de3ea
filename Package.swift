// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "baton",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "baton", targets: ["baton"]),
        .library(name: "BatonCore", targets: ["BatonCore"]),
        .library(name: "BatonLua", targets: ["BatonLua"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        // Debian's liblua5.4 (apt liblua5.4-dev), found through pkg-config.
        .systemLibrary(
            name: "CLua",
            pkgConfig: "lua5.4",
            providers: [.apt(["liblua5.4-dev"]), .brew(["lua"])]
        ),
        // Everything that may raise a Lua error or yield lives here, in C, so no longjmp
        // ever crosses a Swift frame.
        .target(name: "CLuaShim", dependencies: ["CLua"]),
        // Debian's libsystemd (apt libsystemd-dev), found through pkg-config: sd-bus, which the
        // MPRIS player backend talks D-Bus with.
        .systemLibrary(
            name: "CSystemd",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        .target(name: "BatonCore"),
        // An MQTT 5 client over SwiftNIO (the broker link's transport): codec, session state
        // machine and channel handler; no Baton modules.
        .target(
            name: "BatonMQTT",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Protocol/baton.proto's generated Swift (committed; scripts/gen-proto), the frame codec,
        // and Value ⇄ wire.
        .target(
            name: "BatonWire",
            dependencies: [
                "BatonCore",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .target(
            name: "BatonLua",
            dependencies: [
                "CLuaShim", "BatonCore", "BatonClient", "BatonNet", "BatonWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // baton.batch's scheduling, in Lua, compiled into the binary as bytes: no resource
            // bundle to find at run time (Bundle.module needs one beside the executable on Linux).
            resources: [.embedInCode("Lua/batch.lua"), .embedInCode("Lua/player.lua")]
        ),
        // Connections: NIO server and client channels, mutual TLS 1.3, the handshake, request
        // ids, channel multiplexing, keepalive and timeouts.
        .target(
            name: "BatonNet",
            dependencies: [
                "BatonWire", "BatonCore", "BatonSecurity",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The account: its CA, this device's key and certificate, enrolment, revocation. Files
        // and locks, no sockets.
        .target(
            name: "BatonSecurity",
            dependencies: [
                "BatonCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Baton's own mDNS/DNS-SD: the DNS wire codec (RFC 1035 §4, RFC 6762, RFC 6763), the
        // multicast transport, the responder and the browser.
        .target(
            name: "BatonDiscovery",
            dependencies: [
                "BatonCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The public Swift API: launch, describe, app-service connections.
        .target(
            name: "BatonClient",
            dependencies: [
                "BatonNet", "BatonWire", "BatonCore", "BatonDiscovery", "BatonSecurity",
                .product(name: "X509", package: "swift-certificates"),
                // Handoff keys are kept hashed (SHA-256).
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The broker link (issue 23): sealed sessions through an MQTT 5 broker (BatonMQTT), its
        // dialer and listener, and presence as a device source.
        .target(
            name: "BatonBroker",
            dependencies: [
                "BatonMQTT", "BatonNet", "BatonClient", "BatonSecurity", "BatonCore", "BatonWire",
                // Presence is signed with the device key (P-256) and carries its chain (DER).
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The host side: the agent's Lua configuration, its apps, launch dispatch and services.
        .target(
            name: "BatonAgent",
            dependencies: [
                "BatonLua", "BatonCore", "BatonNet", "BatonWire", "BatonClient", "BatonDiscovery", "BatonSecurity",
                // MPRIS players, over D-Bus (sd-bus).
                "CSystemd",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // The media a handoff serves to its target: HTTP/1.1 with byte ranges.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "baton",
            dependencies: [
                "BatonLua", "BatonCore", "BatonAgent", "BatonNet", "BatonWire", "BatonClient", "BatonDiscovery", "BatonSecurity",
                "BatonBroker",
                .product(name: "X509", package: "swift-certificates"),
                // A batch journal records its script's and input's SHA-256.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // baton batch's driver, in Lua, compiled in as bytes (as BatonLua's batch.lua).
            resources: [.embedInCode("Lua/batch-driver.lua"), .embedInCode("Lua/players-driver.lua")]
        ),
        // Measures the runtime's hot paths for scripts/bench; not installed.
        .executableTarget(
            name: "baton-bench",
            dependencies: [
                "BatonLua", "BatonCore", "CLuaShim", "BatonClient", "BatonNet", "BatonSecurity", "BatonWire",
                // The broker figures: a fleet of simulated agents in one process.
                "BatonBroker", "BatonMQTT",
                // The handoff figures watch the players over their own sockets.
                "BatonAgent",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // QoS 1 round trips of BatonMQTT beside paho-mqtt on one mosquitto; not installed.
        .executableTarget(
            name: "baton-mqtt-bench",
            dependencies: [
                "BatonMQTT",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "BatonCoreTests", dependencies: ["BatonCore"]),
        .testTarget(
            name: "BatonSecurityTests",
            dependencies: [
                "BatonSecurity", "BatonCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        .testTarget(
            name: "BatonWireTests",
            dependencies: [
                "BatonWire", "BatonCore",
                // The reference the hand-written codec is checked against, byte for byte.
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "BatonDiscoveryTests",
            dependencies: [
                "BatonDiscovery", "BatonCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "BatonLuaTests",
            dependencies: [
                "BatonLua", "BatonCore", "BatonWire", .product(name: "NIOCore", package: "swift-nio"),
                // The reference the Lua tables' own writer is checked against, byte for byte.
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        .testTarget(
            name: "BatonNetTests",
            dependencies: [
                "BatonClient", "BatonNet", "BatonWire", "BatonCore", "BatonSecurity",
                // The handoff tests read real players over their own sockets.
                "BatonAgent",
                .product(name: "X509", package: "swift-certificates"),
                // Keys and certificates of strangers, made by hostile-client tests.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                // Busy polling's tests: channels with and without a socket, shared state.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // A hand-made connection (PeerConnector) takes a logger.
                .product(name: "Logging", package: "swift-log"),
            ],
            // The Python client the protocol interop test runs (ProtocolInteropTests).
            exclude: ["Interop"]
        ),
        .testTarget(
            name: "BatonAgentTests",
            dependencies: [
                "BatonAgent", "BatonLua", "BatonCore", "BatonClient", "BatonNet", "BatonSecurity",
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "BatonCLITests", dependencies: ["BatonCore"]),
        .testTarget(
            name: "BatonMQTTTests",
            dependencies: [
                "BatonMQTT",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                // The TLS test's CA and certificates, made in the test.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
