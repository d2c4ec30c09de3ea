// swift-tools-version: 6.0
// libFuzzer harnesses for every decoder a stranger reaches; scripts/fuzz builds and runs them
// (`-sanitize=fuzzer,address`). A package of its own, so the main build never sees them.
//
// The main package exports only BatonCore and BatonLua as products, and the harnesses need the
// targets under them too (BatonWire, BatonDiscovery, BatonSecurity), so this package builds the
// main package's sources itself: Fuzz/Baton/<Target> is a symbolic link to ../Sources/<Target>,
// and the targets below repeat the main Package.swift's dependencies between them. Keep the two
// in step when a target's dependencies change.
import PackageDescription

let nio = "swift-nio"

let package = Package(
    name: "baton-fuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        // The main package's targets, built from its own sources (Fuzz/Baton/* are links).
        .systemLibrary(name: "CLua", path: "Baton/CLua", pkgConfig: "lua5.4", providers: [.apt(["liblua5.4-dev"])]),
        .target(name: "CLuaShim", dependencies: ["CLua"], path: "Baton/CLuaShim"),
        .target(name: "BatonCore", path: "Baton/BatonCore"),
        .target(
            name: "BatonWire",
            dependencies: [
                "BatonCore",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: nio),
            ],
            path: "Baton/BatonWire"
        ),
        .target(
            name: "BatonLua",
            dependencies: [
                "CLuaShim", "BatonCore", "BatonClient", "BatonNet", "BatonWire",
                .product(name: "NIOCore", package: nio),
                .product(name: "NIOPosix", package: nio),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Baton/BatonLua"
        ),
        .target(
            name: "BatonNet",
            dependencies: [
                "BatonWire", "BatonCore", "BatonSecurity",
                .product(name: "NIOCore", package: nio),
                .product(name: "NIOPosix", package: nio),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: nio),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Baton/BatonNet"
        ),
        .target(
            name: "BatonSecurity",
            dependencies: [
                "BatonCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "NIOConcurrencyHelpers", package: nio),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Baton/BatonSecurity"
        ),
        .target(
            name: "BatonDiscovery",
            dependencies: [
                "BatonCore",
                .product(name: "NIOCore", package: nio),
                .product(name: "NIOPosix", package: nio),
                .product(name: "NIOConcurrencyHelpers", package: nio),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Baton/BatonDiscovery"
        ),
        .target(
            name: "BatonClient",
            dependencies: [
                "BatonNet", "BatonWire", "BatonCore", "BatonDiscovery", "BatonSecurity",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: nio),
                .product(name: "NIOPosix", package: nio),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Baton/BatonClient"
        ),

        // What every harness shares: libFuzzer's driver, called from the harness's main.
        .target(name: "FuzzSupport", path: "Sources/FuzzSupport"),

        // One executable per decoder. scripts/fuzz TARGET runs fuzz-TARGET.
        .executableTarget(
            name: "fuzz-dns",
            dependencies: ["FuzzSupport", "BatonDiscovery", .product(name: "NIOCore", package: nio)],
            path: "Sources/fuzz-dns"
        ),
        .executableTarget(
            name: "fuzz-txt",
            dependencies: ["FuzzSupport", "BatonDiscovery", "BatonCore", .product(name: "NIOCore", package: nio)],
            path: "Sources/fuzz-txt"
        ),
        .executableTarget(
            name: "fuzz-frame",
            dependencies: [
                "FuzzSupport", "BatonWire", "BatonCore",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: nio),
            ],
            path: "Sources/fuzz-frame"
        ),
        .executableTarget(
            name: "fuzz-value",
            dependencies: [
                "FuzzSupport", "BatonWire", "BatonCore",
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                .product(name: "NIOCore", package: nio),
            ],
            path: "Sources/fuzz-value"
        ),
        .executableTarget(
            name: "fuzz-lua",
            dependencies: [
                "FuzzSupport", "BatonLua", "BatonWire", "BatonCore", "CLuaShim",
                .product(name: "NIOCore", package: nio),
                .product(name: "NIOPosix", package: nio),
            ],
            path: "Sources/fuzz-lua"
        ),
        .executableTarget(name: "fuzz-json", dependencies: ["FuzzSupport", "BatonCore"], path: "Sources/fuzz-json"),
        .executableTarget(
            name: "fuzz-revocation",
            dependencies: ["FuzzSupport", "BatonSecurity", "BatonCore", .product(name: "X509", package: "swift-certificates")],
            path: "Sources/fuzz-revocation"
        ),
        .executableTarget(
            name: "fuzz-devicefile",
            dependencies: ["FuzzSupport", "BatonSecurity", "BatonCore", .product(name: "X509", package: "swift-certificates")],
            path: "Sources/fuzz-devicefile"
        ),
        .executableTarget(
            name: "fuzz-invite",
            dependencies: [
                "FuzzSupport", "BatonSecurity", "BatonCore",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Sources/fuzz-invite"
        ),
    ],
    swiftLanguageModes: [.v6]
)
