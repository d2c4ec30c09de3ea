import BatonCore
import Testing

@Suite("Error classes and their exit codes")
struct ErrorClassTests {
    @Test("each class has its exit code", arguments: [
        (ErrorClass.script, Int32(1)), (.usage, 2), (.timeout, 3), (.batch, 4), (.notFound, 68), (.unavailable, 69),
        (.lockHeld, 75), (.denied, 77),
    ])
    func codes(errorClass: ErrorClass, code: Int32) {
        #expect(errorClass.exitCode == code)
    }

    @Test("each cause falls in the class an operator would act on", arguments: [
        (FailureCause.timedOut, ErrorClass.timeout), (.unreachable, .unavailable), (.notAnswering, .unavailable),
        (.unavailable, .unavailable), (.denied, .denied), (.refused, .denied), (.notFound, .notFound),
        (.tooLarge, .script), (.badRequest, .script), (.playerFailed, .script), (.mediaUnavailable, .script),
        (.nothingPlaying, .script), (.cancelled, .script), (.failed, .script),
    ])
    func causes(cause: FailureCause, expected: ErrorClass) {
        #expect(cause.errorClass == expected)
        #expect(cause.exitCode == expected.exitCode)
    }

    @Test("a status alone stands for the cause an operator would act on", arguments: [
        ("remote_system_unavailable", FailureCause?.some(.unreachable)),
        ("app_not_installed", .unavailable), ("app_service_connection_closed", .unavailable),
        ("target_unavailable", .unavailable), ("media_unavailable", .mediaUnavailable),
        ("denied_by_local_system", .denied), ("denied_by_remote_system", .refused), ("not_authorized", .refused),
        ("not_found", .notFound), ("ambiguous", .notFound), ("timeout", .timedOut),
        ("unknown", .failed), ("failure", .failed), ("target_failed", .playerFailed),
        ("value_set_too_large", .tooLarge), ("message_size_too_large", .tooLarge), ("success", nil), ("no such status", nil),
    ])
    func statuses(status: String, expected: FailureCause?) {
        #expect(FailureCause(status: status) == expected)
    }

    @Test("a playback failure is the cause its error code names", arguments: [
        (PlaybackFailure.badRequest("x"), FailureCause.badRequest), (.player("x"), .playerFailed),
        (.didNotPlay("x"), .playerFailed), (.cannotOpen("x"), .mediaUnavailable),
    ])
    func playback(failure: PlaybackFailure, expected: FailureCause) {
        #expect(FailureCause(failure) == expected)
    }
}
