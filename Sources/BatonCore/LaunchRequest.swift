/// A remote launch: what to open, and how to choose what opens it.
public struct LaunchRequest: Sendable, Equatable {
    /// The URI to launch; its scheme picks the handler or app.
    public var uri: String
    /// Launch with this app only (`app_unavailable` if the device lacks it).
    public var appID: String?
    /// Launched the same way when nothing takes `uri`.
    public var fallbackURI: String?
    /// Apps to try first, in order.
    public var preferredAppIDs: [String]
    /// Handed to the app with the URI.
    public var data: ValueDictionary

    public init(uri: String, appID: String? = nil, fallbackURI: String? = nil, preferredAppIDs: [String] = [], data: ValueDictionary = [:]) {
        self.uri = uri
        self.appID = appID
        self.fallbackURI = fallbackURI
        self.preferredAppIDs = preferredAppIDs
        self.data = data
    }

    /// The URI's scheme, lower case (`https` for `HTTPS://x`); nil if it has none
    /// (RFC 3986: a letter, then letters, digits, `+`, `-` or `.`, then `:`).
    public static func scheme(of uri: String) -> String? {
        guard let colon = uri.firstIndex(of: ":"), colon != uri.startIndex else { return nil }
        let scheme = uri[..<colon]
        guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return nil }
        for c in scheme.unicodeScalars {
            guard c.isASCII, c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "+" || c == "-" || c == "." else {
                return nil
            }
        }
        return scheme.lowercased()
    }
}
