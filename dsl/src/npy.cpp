// The .npy format: magic "\x93NUMPY", major/minor version, a little-endian header length (u16 in
// 1.0, u32 in 2.0/3.0), then a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)}
// padded with spaces to a multiple of 64 bytes and ended by '\n', then the raw data.
#include "tessera/npy.h"

#include "tessera/error.h"
#include "tessera/limits.h"

#include <cctype>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tessera {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

/// Item size of a supported descr, or 0.
int descr_size(const std::string &d) {
    if (d.size() != 3) return 0;
    char order = d[0], kind = d[1], size = d[2];
    if (kind != 'i' && kind != 'u' && kind != 'f' && kind != 'b') return 0;
    int n = size - '0';
    if (n != 1 && n != 2 && n != 4 && n != 8) return 0;
    if (kind == 'f' && n == 1) return 0;
    if (n == 1) return (order == '|' || order == '<') ? 1 : 0;
    return order == '<' ? n : 0;
}

[[noreturn]] void fail(const std::string &origin, const std::string &why) {
    throw Error("npy file '" + origin + "': " + why);
}

/// Finds `'key':` in the header dict and returns the position after the colon.
size_t find_key(const std::string &h, const std::string &key, const std::string &origin) {
    for (const char *q : {"'", "\""}) {
        size_t p = h.find(std::string(q) + key + q);
        if (p != std::string::npos) {
            p = h.find(':', p);
            if (p == std::string::npos) break;
            return p + 1;
        }
    }
    fail(origin, "header has no '" + key + "' entry");
}

std::string shape_text(const std::vector<int64_t> &shape) {
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + (shape.size() == 1 ? ",)" : ")");
}

void skip_space(const std::string &h, size_t &p) {
    while (p < h.size() && std::isspace(static_cast<unsigned char>(h[p]))) ++p;
}

} // namespace

int NpyArray::item_size() const { return descr_size(descr); }

int64_t NpyArray::element_count() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

NpyArray parse_npy(const std::vector<uint8_t> &bytes, const std::string &origin) {
    if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) fail(origin, "not a .npy file: it does not start with the magic \\x93NUMPY (write it with numpy.save)");
    int major = bytes[6];
    size_t header_len = 0, start = 0;
    if (major == 1) {
        header_len = size_t(bytes[8]) | size_t(bytes[9]) << 8;
        start = 10;
    } else if (major == 2 || major == 3) {
        if (bytes.size() < 12) fail(origin, "truncated header: " + std::to_string(bytes.size()) + " bytes, a version-2 header needs 12");
        header_len = size_t(bytes[8]) | size_t(bytes[9]) << 8 | size_t(bytes[10]) << 16 | size_t(bytes[11]) << 24;
        start = 12;
    } else {
        fail(origin, "unsupported format version " + std::to_string(major) + "." + std::to_string(bytes[7]) +
                         " (supported: 1.0, 2.0, 3.0)");
    }
    if (bytes.size() - start < header_len)
        fail(origin, "truncated header: it declares " + std::to_string(header_len) + " bytes, the file has " +
                         std::to_string(bytes.size() - start) + " after the header length");
    std::string h(bytes.begin() + long(start), bytes.begin() + long(start + header_len));
    NpyArray a;
    size_t p = find_key(h, "descr", origin);
    skip_space(h, p);
    if (p >= h.size() || (h[p] != '\'' && h[p] != '"')) fail(origin, "header entry 'descr' is not a quoted string");
    size_t e = h.find(h[p], p + 1);
    if (e == std::string::npos) fail(origin, "header entry 'descr' has no closing quote");
    a.descr = h.substr(p + 1, e - p - 1);
    if (a.descr.size() == 3 && a.descr[0] == '=' ) a.descr[0] = '<'; // native order on a little-endian host
    if (descr_size(a.descr) == 0)
        fail(origin, "unsupported dtype '" + a.descr.substr(0, 16) +
                         "' (supported: little-endian or byte-sized bool/int/uint/float, e.g. <f4, <i4, |i1)");
    if (a.item_size() == 1) a.descr[0] = '|'; // "<i1" and "|i1" are the same type
    p = find_key(h, "fortran_order", origin);
    skip_space(h, p);
    if (h.compare(p, 4, "True") == 0) fail(origin, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
    if (h.compare(p, 5, "False") != 0) fail(origin, "header entry 'fortran_order' is neither True nor False");
    p = find_key(h, "shape", origin);
    skip_space(h, p);
    if (p >= h.size() || h[p] != '(') fail(origin, "header entry 'shape' is not a tuple such as (3, 4)");
    ++p;
    while (true) {
        skip_space(h, p);
        if (p < h.size() && h[p] == ')') break;
        size_t b = p;
        while (p < h.size() && std::isdigit(static_cast<unsigned char>(h[p]))) ++p;
        if (b == p)
            fail(origin, "shape entry " + std::to_string(a.shape.size()) + " is not a non-negative integer" +
                             (p < h.size() ? std::string(" (found '") + h[p] + "')" : std::string(" (the header ends)")));
        int64_t extent = 0;
        auto r = std::from_chars(h.data() + b, h.data() + p, extent);
        if (r.ec != std::errc() || extent > limits::kMaxExtent)
            fail(origin, "shape entry " + std::to_string(a.shape.size()) + " is " + h.substr(b, std::min<size_t>(p - b, 30)) +
                             ", above the limit of " + std::to_string(limits::kMaxExtent) + " per dimension");
        if (int(a.shape.size()) == limits::kMaxRank)
            fail(origin, "the shape has more than " + std::to_string(limits::kMaxRank) + " dimensions, the most supported");
        a.shape.push_back(extent);
        skip_space(h, p);
        if (p < h.size() && h[p] == ',') ++p;
        else if (p < h.size() && h[p] != ')')
            fail(origin, std::string("expected ',' or ')' after shape entry ") + std::to_string(a.shape.size() - 1) +
                             ", found '" + h[p] + "'");
    }
    // NumPy allows zero extents (an empty array), so they pass here; whoever binds the array to a
    // tensor compares shapes.
    std::string problem;
    const auto size = limits::tensor_size(a.shape, a.item_size(), &problem, /*min_extent=*/0);
    if (!size) fail(origin, "shape " + shape_text(a.shape) + ": " + problem);
    const int64_t n = size->bytes;
    const size_t data_start = start + header_len;
    if (bytes.size() - data_start < uint64_t(n))
        fail(origin, "truncated data: shape " + shape_text(a.shape) + " of '" + a.descr + "' needs " + std::to_string(n) +
                         " bytes, the file has " + std::to_string(bytes.size() - data_start) +
                         " after its header (was it cut short? save it again with numpy.save)");
    a.data.assign(bytes.begin() + long(data_start), bytes.begin() + long(data_start) + n);
    return a;
}

NpyArray read_npy(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot open");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return parse_npy(bytes, path);
}

std::vector<uint8_t> serialize_npy(const NpyArray &a, const std::string &origin) {
    if (descr_size(a.descr) == 0) fail(origin, "unsupported dtype '" + a.descr + "'");
    std::string problem;
    const auto size = limits::tensor_size(a.shape, a.item_size(), &problem, /*min_extent=*/0);
    if (!size) fail(origin, "shape " + shape_text(a.shape) + ": " + problem);
    if (int64_t(a.data.size()) != size->bytes)
        fail(origin, "data has " + std::to_string(a.data.size()) + " bytes but shape " + shape_text(a.shape) + " needs " +
                         std::to_string(size->bytes));
    std::ostringstream h;
    h << "{'descr': '" << a.descr << "', 'fortran_order': False, 'shape': (";
    for (size_t i = 0; i < a.shape.size(); ++i) h << a.shape[i] << (a.shape.size() == 1 || i + 1 < a.shape.size() ? "," : "");
    h << "), }";
    std::string header = h.str();
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');
    std::vector<uint8_t> out(kMagic, kMagic + 6);
    out.push_back(1);
    out.push_back(0);
    out.push_back(uint8_t(header.size() & 0xff));
    out.push_back(uint8_t(header.size() >> 8));
    out.insert(out.end(), header.begin(), header.end());
    out.insert(out.end(), a.data.begin(), a.data.end());
    return out;
}

void write_npy(const std::string &path, const NpyArray &a) {
    std::vector<uint8_t> bytes = serialize_npy(a, path);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) fail(path, "cannot open for writing");
    out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
    if (!out) fail(path, "write failed");
}

} // namespace tessera
