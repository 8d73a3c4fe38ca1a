#pragma once
// What tests that touch the file system or run the `tessera` binary share. ctest runs every
// test in a process of its own, several at once (`ctest -j`), so nothing here uses a fixed path:
// each test gets a directory named after itself and its process.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace tessera_test {

/// Whether this test runs under AddressSanitizer + UndefinedBehaviorSanitizer (`make sanitize`),
/// where code runs several times slower: the longest cases run at smaller sizes there — trimmed,
/// never skipped.
#ifdef TESSERA_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

/// <temp>/tessera_<suite>_<test>_<pid>: a path no other test (or run) uses.
inline std::filesystem::path test_scoped_path() {
    const testing::TestInfo *info = testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "tessera_";
    name += info ? std::string(info->test_suite_name()) + "_" + info->name() : "no_test";
    for (char &c : name)
        if (c == '/') c = '_'; // parameterised test names
    return std::filesystem::path(testing::TempDir()) / (name + "_" + std::to_string(::getpid()));
}

/// A file's whole content ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path &path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// A fresh, empty directory of the running test's own (test_scoped_path()).
inline std::filesystem::path unique_temp_dir() {
    const std::filesystem::path dir = test_scoped_path();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

/// What a command printed and how it ended.
struct CommandResult {
    int status = -1; ///< the exit status; -1 when it did not exit normally (a signal)
    std::string out, err;
};

/// Runs `command` through the shell, its stderr captured through a file of this test's own.
inline CommandResult run_command(const std::string &command) {
    static int calls = 0;
    const std::filesystem::path err_file = test_scoped_path().string() + "_stderr_" + std::to_string(calls++);
    CommandResult r;
    FILE *p = popen((command + " 2>'" + err_file.string() + "'").c_str(), "r");
    if (!p) return r;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream e(err_file);
    r.err.assign(std::istreambuf_iterator<char>(e), std::istreambuf_iterator<char>());
    std::filesystem::remove(err_file);
    return r;
}

} // namespace tessera_test
