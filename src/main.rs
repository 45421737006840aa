fn main() {
    std::process::exit(blazes::cli::run());
}
