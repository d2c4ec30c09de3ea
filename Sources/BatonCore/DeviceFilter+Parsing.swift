extension DeviceFilter {
    /// A filter value that is not one of its field's words.
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        /// The field: `kind`, `platform`, `transport`, `status` or `authorization`.
        public var field: String
        /// The word given.
        public var value: String
        /// The words the field takes, in the order to show them.
        public var allowed: [String]

        /// `unknown kind 'toaster' (kinds: desktop, laptop, ...)`.
        public var description: String {
            "unknown \(field) '\(value)' (\(Self.plural(field)): \(allowed.joined(separator: ", ")))"
        }

        static func plural(_ field: String) -> String {
            field.hasSuffix("s") ? field + "es" : field + "s"
        }
    }

    /// The filter the words of Rome's filters describe, as the command line and scripts give
    /// them: kinds and platforms are alternatives (empty: any); `transport` is `local`, `cloud`
    /// or `any` (nil: any); `status` is `available` (nil: the default) or `any`;
    /// `authorization` is `same_account` (nil: the default) or `anonymous`. A word that is not
    /// one of these throws a ``ParseError`` naming the field, the word and the words it takes.
    public static func parse(
        kinds: [String] = [], platforms: [String] = [], transport: String? = nil, status: String? = nil,
        authorization: String? = nil
    ) throws(ParseError) -> DeviceFilter {
        var filter = DeviceFilter()
        for kind in kinds {
            guard let k = DeviceKind(rawValue: kind) else {
                throw ParseError(field: "kind", value: kind, allowed: DeviceKind.allCases.map(\.rawValue))
            }
            filter.kinds.insert(k)
        }
        for platform in platforms {
            guard let p = Platform(rawValue: platform) else {
                throw ParseError(field: "platform", value: platform, allowed: Platform.allCases.map(\.rawValue))
            }
            filter.platforms.insert(p)
        }
        switch transport {
        case nil, "any": filter.transport = nil
        case let t?:
            guard let value = Transport(rawValue: t) else {
                throw ParseError(field: "transport", value: t, allowed: Transport.allCases.map(\.rawValue) + ["any"])
            }
            filter.transport = value
        }
        switch status {
        case nil, "available": filter.status = .available
        case "any": filter.status = nil
        case let s?: throw ParseError(field: "status", value: s, allowed: ["available", "any"])
        }
        if let authorization {
            guard let value = AuthorizationKind(rawValue: authorization) else {
                throw ParseError(field: "authorization", value: authorization, allowed: AuthorizationKind.allCases.map(\.rawValue))
            }
            filter.authorization = value
        }
        return filter
    }
}
