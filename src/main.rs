fn main() -> std::process::ExitCode {
    redlock::main()
}
