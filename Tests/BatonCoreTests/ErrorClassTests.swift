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

    @Test("a status falls in the class an operator would act on", arguments: [
        ("remote_system_unavailable", "", ErrorClass?.some(.unavailable)),
        ("app_not_installed", "", .unavailable), ("app_service_connection_closed", "", .unavailable),
        ("target_unavailable", "", .unavailable), ("media_unavailable", "", .unavailable),
        ("denied_by_local_system", "", .denied), ("denied_by_remote_system", "", .denied), ("not_authorized", "", .denied),
        ("not_found", "", .notFound), ("ambiguous", "", .notFound),
        ("timeout", "", .timeout), ("unknown", "timed out: no answer within 5s", .timeout),
        ("unknown", "the launch function broke", .script), ("failure", "", .script), ("target_failed", "", .script),
        ("value_set_too_large", "", .script), ("success", "", nil),
    ])
    func statuses(status: String, detail: String, expected: ErrorClass?) {
        #expect(ErrorClass(status: status, detail: detail) == expected)
    }
}
