// The bad-input table (cases.json beside this file): every case writes its files into a fresh
// temporary directory, runs the built `tessera` there, and checks the contract of DESIGN.md §1
// for malformed input — a `tessera: error:` line naming the file, line or JSON path, exit status
// 1..127 (no signal, no abort), the expected text, and no C++ exception name leaking through.
//
// A case is {"name", "files": {NAME: FILE}, "args": [...], "expect": TEXT, "where": TEXT}, with an
// optional "note" (why it is here: the fuzz target that found it, the bug it guards). A FILE
// is a string (its text) or an object that builds bytes:
//   {"hex": "93 4e ..."}                                raw bytes
//   {"npy": {"header": "{...}", "data": N, "version": 1, "magic": HEX, "header_len": N}}
//        a .npy file: magic, version, the header (padded to 64 bytes unless header_len is given)
//        and N zero bytes of data
//   {"tsprg": {"payload": [TOKENS], "version": 1, "length": N, "checksum": N}}
//        a binary program around a payload written as tokens "s:text" (a string), "v:-3" (a
//        zigzag varint), "u:300" (a raw LEB128 varint), "h:ff00" (raw bytes); length and
//        checksum are computed unless given
//   {"target": "tsp-mini", "patch": [JSON Patch ops]}   a built-in target file, patched
//   {"repeat": TEXT, "times": N, "then": TEXT, "then_times": M}   TEXT N times, then `then` M
//                                                       times (default 1)
//   {"sqlite": [SQL lines]}                             an SQLite file made by running the SQL
//                                                       (tuning databases of any schema, damaged
//                                                       records, other applications' files)
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path &p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void put_le(std::string &out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(char(uint8_t(v >> (8 * i))));
}

void leb128(std::string &out, uint64_t z) {
    do {
        uint8_t b = z & 0x7f;
        z >>= 7;
        out.push_back(char(b | (z ? 0x80 : 0)));
    } while (z);
}

std::string from_hex(const std::string &hex) {
    std::string out, digits;
    for (char c : hex)
        if (std::isxdigit(static_cast<unsigned char>(c))) digits.push_back(c);
    for (size_t i = 0; i + 1 < digits.size(); i += 2) out.push_back(char(std::stoi(digits.substr(i, 2), nullptr, 16)));
    return out;
}

std::string npy_bytes(const json &spec) {
    std::string out = spec.contains("magic") ? from_hex(spec["magic"]) : std::string("\x93NUMPY");
    const int version = spec.value("version", 1);
    out.push_back(char(version));
    out.push_back(0);
    std::string header = spec.value("header", "");
    const int len_bytes = version == 1 ? 2 : 4;
    if (!spec.contains("header_len")) {
        const size_t total = out.size() + len_bytes + header.size() + 1;
        header.append((64 - total % 64) % 64, ' ');
        header.push_back('\n');
    }
    put_le(out, spec.value("header_len", uint64_t(header.size())), len_bytes);
    out += header;
    out.append(spec.value("data", size_t(0)), '\0');
    return out;
}

std::string program_bytes(const json &spec) {
    std::string payload;
    for (const std::string &token : spec["payload"]) {
        const std::string kind = token.substr(0, 2), value = token.substr(2);
        if (kind == "s:") {
            leb128(payload, uint64_t(value.size()) << 1);
            payload += value;
        } else if (kind == "v:") {
            const int64_t v = std::stoll(value);
            leb128(payload, (uint64_t(v) << 1) ^ uint64_t(v >> 63));
        } else if (kind == "u:") {
            leb128(payload, std::stoull(value));
        } else if (kind == "h:") {
            payload += from_hex(value);
        } else {
            ADD_FAILURE() << "unknown payload token " << token;
        }
    }
    uint64_t fnv = 1469598103934665603ull;
    for (char c : payload) {
        fnv ^= uint8_t(c);
        fnv *= 1099511628211ull;
    }
    std::string out("TSPRG\0\0\1", 8);
    put_le(out, spec.value("version", 1), 4);
    put_le(out, spec.value("length", uint64_t(payload.size())), 8);
    put_le(out, spec.value("checksum", fnv), 8);
    return out + payload;
}

std::string file_bytes(const json &f) {
    if (f.is_string()) return f.get<std::string>();
    if (f.contains("hex")) return from_hex(f["hex"]);
    if (f.contains("npy")) return npy_bytes(f["npy"]);
    if (f.contains("tsprg")) return program_bytes(f["tsprg"]);
    if (f.contains("target")) {
        json t = json::parse(read_text(fs::path(TESSERA_TARGETS_DIR) / (f["target"].get<std::string>() + ".json")));
        return t.patch(f.value("patch", json::array())).dump(2);
    }
    if (f.contains("repeat")) {
        std::string out;
        for (int i = 0; i < f["times"].get<int>(); ++i) out += f["repeat"].get<std::string>();
        for (int i = 0; i < f.value("then_times", 1); ++i) out += f.value("then", "");
        return out;
    }
    if (f.contains("sqlite")) {
        std::string sql;
        for (const json &line : f["sqlite"]) sql += line.get<std::string>() + "\n";
        std::string path = (fs::temp_directory_path() / "tessera-bad-input-db-XXXXXX").string();
        const int fd = mkstemp(path.data());
        if (fd < 0) {
            ADD_FAILURE() << "cannot make a temporary file";
            return "";
        }
        close(fd);
        fs::remove(path); // SQLite creates it
        sqlite3 *db = nullptr;
        char *error = nullptr;
        if (sqlite3_open(path.c_str(), &db) != SQLITE_OK || sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK)
            ADD_FAILURE() << "the SQL of a case does not run: " << (error ? error : sqlite3_errmsg(db)) << "\n" << sql;
        sqlite3_free(error);
        sqlite3_close(db);
        std::string bytes = read_text(path);
        fs::remove(path);
        return bytes;
    }
    ADD_FAILURE() << "unknown file spec " << f.dump();
    return "";
}

std::string quote(const std::string &s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

json load_cases() {
    return json::parse(read_text(fs::path(TESSERA_BAD_INPUTS_DIR) / "cases.json"));
}

/// One row of the table; printed by its name, so ctest lists "Table/BadInput.../npy_bad_magic".
struct Case {
    json row;
};
void PrintTo(const Case &c, std::ostream *os) { *os << c.row["name"].get<std::string>(); }

std::vector<Case> all_cases() {
    std::vector<Case> out;
    for (const json &row : load_cases()) out.push_back({row});
    return out;
}

class BadInput : public testing::TestWithParam<Case> {};

TEST_P(BadInput, IsAClearErrorNotACrash) {
    const json &c = GetParam().row;
    // Unique per case and per process: ctest runs cases in parallel.
    std::string dir_template = (fs::temp_directory_path() / "tessera-bad-input-XXXXXX").string();
    ASSERT_NE(mkdtemp(dir_template.data()), nullptr);
    const fs::path dir = dir_template;
    for (auto it = c["files"].begin(); it != c["files"].end(); ++it) {
        std::ofstream out(dir / it.key(), std::ios::binary);
        const std::string bytes = file_bytes(it.value());
        out.write(bytes.data(), std::streamsize(bytes.size()));
    }
    std::string cmd = "cd " + quote(dir.string()) + " && " + quote(TESSERA_CLI);
    for (const std::string &a : c["args"]) cmd += " " + quote(a);
    cmd += " >stdout.txt 2>stderr.txt";
    const int status = std::system(cmd.c_str());
    const std::string err = read_text(dir / "stderr.txt");
    fs::remove_all(dir);

    ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal; stderr:\n" << err;
    const int code = WEXITSTATUS(status);
    EXPECT_GE(code, 1) << err;
    EXPECT_LE(code, 127) << err;
    EXPECT_EQ(err.rfind("tessera: error: ", 0), 0u) << err;
    EXPECT_NE(err.find(c["expect"].get<std::string>()), std::string::npos) << "expected: " << c["expect"] << "\nstderr: " << err;
    EXPECT_NE(err.find(c["where"].get<std::string>()), std::string::npos) << "expected the place " << c["where"] << "\nstderr: " << err;
    for (const char *leak : {"std::", "bad_alloc", "basic_string", "json.exception", "stoi", "stoll", "stod",
                             "out_of_range", "invalid_argument", "length_error", "vector::", "what()"})
        EXPECT_EQ(err.find(leak), std::string::npos) << "a C++ exception leaks through (" << leak << "): " << err;
}

std::string case_name(const testing::TestParamInfo<Case> &info) { return info.param.row["name"].get<std::string>(); }

INSTANTIATE_TEST_SUITE_P(Table, BadInput, testing::ValuesIn(all_cases()), case_name);

TEST(BadInputTable, HasAtLeastFifteenCasesPerReaderAndSubcommand) {
    std::map<std::string, int> per_reader;
    std::set<std::string> names;
    for (const json &c : load_cases()) {
        per_reader[c["reader"].get<std::string>()]++;
        EXPECT_TRUE(names.insert(c["name"].get<std::string>()).second) << c["name"] << " is in the table twice";
    }
    for (const char *reader : {"assembly", "binary", "target", "schedule", "npy", "cli targets", "cli sim", "cli run", "cli lower", "cli tune", "cli db",
                               "cli import", "cli run-model", "cli compile", "cli sweep", "cli plot", "cli db replay"})
        EXPECT_GE(per_reader[reader], 15) << reader;
    EXPECT_GE(names.size(), 200u);
}

} // namespace
