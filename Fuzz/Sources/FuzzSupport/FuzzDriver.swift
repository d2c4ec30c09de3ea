// libFuzzer's driver, for harnesses whose `main` SwiftPM names itself. On Linux SwiftPM links an
// executable with `--defsym main=<module>_main`, so libFuzzer's own main is never used; a
// harness's top-level code calls `fuzz { bytes in ... }`, which hands the process's arguments to
// LLVMFuzzerRunDriver (libFuzzer's documented entry for programs with a main of their own).

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

nonisolated(unsafe) private var harness: ((UnsafeRawBufferPointer) -> Void)?

/// libFuzzer's archive holds its own `main`, which wants this symbol even though SwiftPM's
/// `--defsym main=` keeps that main from running; the driver is given the same function.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let harness else { fatalError("fuzz { ... } was not called: libFuzzer's own main ran") }
    harness(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// Runs libFuzzer with this process's arguments, calling `body` with each input. Never returns.
public func fuzz(_ body: @escaping (UnsafeRawBufferPointer) -> Void) -> Never {
    harness = body
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    let status = LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput)
    exit(status)
}

/// Stops the run with `message`: libFuzzer reports it as a crash and keeps the input.
public func fuzzFailure(_ message: String, file: StaticString = #file, line: UInt = #line) -> Never {
    fatalError(message, file: file, line: line)
}

nonisolated(unsafe) private let verbose = getenv("FUZZ_VERBOSE").map { String(cString: $0) == "1" } ?? false

/// Prints `message` when FUZZ_VERBOSE=1: how far an input got, for replays (`scripts/fuzz
/// TARGET FILE` with FUZZ_VERBOSE=1 says what each seed reaches).
public func note(_ message: @autoclosure () -> String) {
    if verbose { print("fuzz: \(message())") }
}
