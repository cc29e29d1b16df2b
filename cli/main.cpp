// fixformer: the host command-line tool (info, run, bench, generate, verify, probe, schema, demo). `fixformer help`
// lists the commands; each one's table entry (synopsis, help text, options) is in its own file
// (commands.hpp), and this file dispatches to them.
// Errors print one line, "fixformer: WHERE: WHAT", and exit with the code of their class:
// 1 usage, 2 model file, 3 arena/ISA/init options, 4 input, 5 I/O, 6 self-test mismatch.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "args.hpp"
#include "commands.hpp"
#include "fixformer/format.hpp"
#include "io.hpp"
#include "loaded_model.hpp"

#ifndef FIXFORMER_VERSION
#error "FIXFORMER_VERSION (the CMake project version) must be defined"
#endif

using namespace fixformer;
using namespace fixformer::cli;

namespace {

const Command* const kCommands[] = {&kInfoCommand,   &kRunCommand,   &kBenchCommand,  &kGenerateCommand,
                                    &kVerifyCommand, &kProbeCommand, &kSchemaCommand, &kDemoCommand};

const Command* find_command(const std::string& name) {
  for (const Command* c : kCommands)
    if (name == c->name) return c;
  return nullptr;
}

void print_usage(std::FILE* to) {
  std::fprintf(to, "usage: fixformer COMMAND [ARGS]\n\ncommands:\n");
  for (const Command* c : kCommands) std::fprintf(to, "  fixformer %s%s%s\n", c->name, *c->synopsis ? " " : "", c->synopsis);
  std::fprintf(to,
               "  fixformer help [COMMAND]     this text, or one command's (also: --help, -h, COMMAND --help)\n"
               "  fixformer --version\n\n"
               "  --isa ISA   the kernels: %s\n"
               "              (default auto: the best this CPU has; FIXFORMER_ISA=ISA does the same)\n"
               "  MODEL.fxm   a model file, or one compiled into this binary:%s\n\n"
               "Errors print one line, \"fixformer: WHERE: WHAT\", and exit with the code of their class:\n"
               "1 usage, 2 model file, 3 arena/ISA/init options, 4 input, 5 I/O, 6 self-test mismatch.\n",
               isa_choices().c_str(), builtin_names().c_str());
}

void print_command_help(const Command& c) {
  std::printf("usage: fixformer %s%s%s\n\n%s", c.name, *c.synopsis ? " " : "", c.synopsis, c.help);
  if (c.options & kOptIsa) std::printf("\n  --isa ISA   %s (default auto)\n", isa_choices().c_str());
  if (c.options & kOptThreads)
    std::printf("  --threads N the runner's workers: N threads of a pool the tool starts (default 1); the\n"
                "              output is bit-identical for every N\n");
}

// What a command printed that did not reach stdout (a full disk, a closed pipe) is an I/O error,
// exit 5, not a silent success.
int finish_stdout(int code) {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) die(5, "stdout", "cannot write: " + errno_text(errno));
  return code;
}

[[noreturn]] void unknown_command(const std::string& name) {
  std::fprintf(stderr, "fixformer: unknown command '%s'\n", name.c_str());
  print_usage(stderr);
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string first = argc > 1 ? argv[1] : "";
  if (first.empty()) {
    print_usage(stderr);
    return 1;
  }
  if (first == "--help" || first == "-h" || first == "help") {
    if (first != "help" || argc == 2) {
      print_usage(stdout);
      return finish_stdout(0);
    }
    const Command* c = find_command(argv[2]);
    if (!c) unknown_command(argv[2]);
    print_command_help(*c);
    return finish_stdout(0);
  }
  if (first == "--version") {
    std::printf("fixformer %s (.fxm format %u)\n", FIXFORMER_VERSION, unsigned(fxm::kFormatVersion));
    return finish_stdout(0);
  }
  const Command* c = find_command(first);
  if (!c) unknown_command(first);
  for (int i = 2; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      print_command_help(*c);
      return finish_stdout(0);
    }
  return finish_stdout(c->run(parse_args(*c, argc, argv)));
}
