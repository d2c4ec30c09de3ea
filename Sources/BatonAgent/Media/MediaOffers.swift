import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// The files this device serves, each behind a token of its own: what one handoff offered one
/// target. A token names one file, may be used only from one address, and ends at its expiry;
/// a renderer proves no identity, so the token and the address are all that is checked.
final class MediaOffers: Sendable {
    /// One file offered.
    struct Offer: Sendable {
        let path: String
        /// The address (IP) the file may be fetched from.
        let client: String
        let expires: NIODeadline
    }

    /// Why a request gets nothing.
    enum Refusal: Error, Equatable {
        /// No such token, or it expired (404: nothing says whether it ever was).
        case unknown
        /// Another address than the one it was offered to (403).
        case wrongAddress
    }

    private let offers = NIOLockedValueBox<[String: Offer]>([:])

    /// Offers `path` to `client` until `expires`; the token that names it (128 random bits, hex).
    func offer(_ path: String, to client: String, until expires: NIODeadline) -> String {
        let token = SymmetricKey(size: .bits128).withUnsafeBytes { bytes in bytes.map { String(format: "%02x", $0) }.joined() }
        offers.withLockedValue { offers in
            let now = NIODeadline.now()
            // Expired offers go as new ones come: the table holds only what may still be fetched.
            offers = offers.filter { $0.value.expires > now }
            offers[token] = Offer(path: path, client: MediaOffers.normalised(client), expires: expires)
        }
        return token
    }

    /// The offer `token` names for a request from `address`.
    func offer(_ token: String, from address: String) -> Result<Offer, Refusal> {
        offers.withLockedValue { offers in
            guard let offer = offers[token], offer.expires > .now() else { return .failure(.unknown) }
            guard offer.client == MediaOffers.normalised(address) else { return .failure(.wrongAddress) }
            return .success(offer)
        }
    }

    /// `address` as it is compared: an IPv4 address mapped into IPv6 as the IPv4 one, and
    /// `localhost` as 127.0.0.1.
    static func normalised(_ address: String) -> String {
        let lowered = address.lowercased()
        if lowered.hasPrefix("::ffff:"), lowered.contains(".") { return String(lowered.dropFirst("::ffff:".count)) }
        if lowered == "localhost" { return "127.0.0.1" }
        return lowered
    }
}
