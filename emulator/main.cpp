// infergate-emulator: a deterministic backend in seven dialects (openai/vLLM, sglang, tgi, ollama,
// llamacpp, vllm_legacy, anthropic) for tests, demos and
// benchmarks. See docs/emulator.md.
#include <csignal>
#include <cstdio>
#include <exception>

#include "emulator/options.hpp"
#include "emulator/server.hpp"

int main(int argc, char** argv) {
    using infergate::emulator::Options;
    // Asio sends with MSG_NOSIGNAL, but a stray write elsewhere must not kill the process.
    std::signal(SIGPIPE, SIG_IGN);
    const Options options = infergate::emulator::parse_command_line(argc, argv);
    try {
        infergate::emulator::Server server(options);
        const std::uint16_t port = server.bind();
        // Tests parse exactly this line to learn the ephemeral port.
        const bool v6 = options.host.find(':') != std::string::npos;
        std::printf("listening on %s%s%s:%u\n", v6 ? "[" : "", options.host.c_str(), v6 ? "]" : "",
                    static_cast<unsigned>(port));
        std::fflush(stdout);
        server.run();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "infergate-emulator: %s\n", e.what());
        return 1;
    }
    return 0;
}
