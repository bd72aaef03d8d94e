fn main() -> std::process::ExitCode {
    dlock::main(std::env::args_os()).into()
}
