#include "jpeg/spectral_decode.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

namespace tfliquid::jpeg {
namespace {

constexpr uint8_t kSofProgressiveHuffman = 0xC2;
constexpr int kMaxComponents = 4;
constexpr int kMaxBlocksInMcu = 10;  // T.81 B.2.3, and libjpeg's limit

// The most bits one block of a scan takes: 63 AC codes of 16 bits, each with up to 15 bits of value.
constexpr size_t kMostBitsPerBlock = 63 * (16 + 15);
// Zero bytes after a scan's data, so that the reads of a block that overruns it stay in the buffer: the decoder
// checks for an overrun after each block (each MCU of a DC scan).
constexpr size_t kPadding = 8 + kMaxBlocksInMcu * kMostBitsPerBlock / 8;

// Codes of up to kFastBits bits are looked up in one table read; longer ones length by length, as T.81 F.2.2.3 does.
constexpr int kFastBits = 9;

struct HuffmanTable {
  bool defined = false;
  std::array<uint16_t, 1 << kFastBits> fast;  // by the next kFastBits bits: length << 8 | symbol, 0 if longer
  // AC tables: by the next kFastBits bits when they hold the code of a non-zero coefficient and all its value's
  // bits: value << 16 | zeros before it << 8 | bits taken; 0 otherwise. One look-up for most coefficients.
  std::array<int32_t, 1 << kFastBits> fast_ac;
  std::array<int32_t, 17> max_code;      // by length: the largest code, -1 if none
  std::array<int32_t, 17> index_offset;  // by length: a code's index in symbols, less the code
  std::array<uint8_t, 256> symbols;
};

// The value of the `size` bits at the start of `window` (1 <= size <= 15; T.81 F.2.2.1, EXTEND).
inline int32_t Extend(uint64_t window, int size) {
  const auto bits = static_cast<int32_t>(window >> (64 - size));
  return bits < (1 << (size - 1)) ? bits - (1 << size) + 1 : bits;
}

// Builds a table from a DHT's counts of codes by length and their symbols, refusing what libjpeg refuses
// (jdhuff.c, jpeg_make_d_derived_tbl): codes that do not fit their length, and DC symbols (bit counts) over 15.
bool BuildTable(const uint8_t* counts, const uint8_t* symbols, int total, bool dc, HuffmanTable* table) {
  std::memcpy(table->symbols.data(), symbols, total);
  table->fast.fill(0);
  int code = 0, index = 0;
  for (int length = 1; length <= 16; ++length) {
    const int count = counts[length - 1];
    table->index_offset[length] = index - code;
    for (int i = 0; i < count; ++i, ++code, ++index) {
      if (code >= (1 << length) || (dc && symbols[index] > 15)) return false;  // more codes than the length has
      if (length <= kFastBits) {
        const int shift = kFastBits - length;
        std::fill(table->fast.begin() + (code << shift), table->fast.begin() + ((code + 1) << shift),
                  static_cast<uint16_t>(length << 8 | symbols[index]));
      }
    }
    table->max_code[length] = count > 0 ? code - 1 : -1;
    if (code >= (1 << length)) return false;  // no code may be all ones
    code <<= 1;
  }
  if (!dc) {
    for (int bits = 0; bits < (1 << kFastBits); ++bits) {
      const uint16_t entry = table->fast[bits];
      const int length = entry >> 8, run = (entry >> 4) & 15, size = entry & 15;
      table->fast_ac[bits] = 0;
      if (entry == 0 || size == 0 || length + size > kFastBits) continue;
      const int32_t value = Extend(uint64_t{static_cast<uint32_t>(bits)} << (64 - kFastBits + length), size);
      table->fast_ac[bits] = static_cast<int32_t>(static_cast<uint32_t>(value) << 16) | run << 8 | (length + size);
    }
  }
  table->defined = true;
  return true;
}

// A DHT segment's fields (its length - 2 bytes): one or more tables.
bool ReadTables(const uint8_t* fields, size_t size, std::array<HuffmanTable, 4>* dc, std::array<HuffmanTable, 4>* ac) {
  while (size > 0) {
    if (size < 17) return false;
    const int table_class = fields[0] >> 4, id = fields[0] & 15;
    int total = 0;
    for (int i = 1; i <= 16; ++i) total += fields[i];
    if (table_class > 1 || id >= 4 || total > 256 || size < 17u + total) return false;
    HuffmanTable* table = table_class == 0 ? &(*dc)[id] : &(*ac)[id];
    if (!BuildTable(fields + 1, fields + 17, total, table_class == 0, table)) return false;
    fields += 17 + total;
    size -= 17 + total;
  }
  return true;
}

// Reads a scan's bits from its unstuffed bytes, followed by kPadding zero bytes, through a 64-bit buffer that
// Refill tops up without a branch (F. Giesen's "variant 4").
class BitReader {
 public:
  BitReader(const uint8_t* bytes, size_t size) : start_(bytes), next_(bytes), bits_(8 * size) {}

  // Afterwards at least 56 bits are buffered: a Huffman code and its value take at most 31.
  void Refill() {
    if (count_ >= 31) return;
    uint64_t word;
    std::memcpy(&word, next_, sizeof(word));
    buffer_ |= __builtin_bswap64(word) >> count_;
    next_ += (63 - count_) >> 3;
    count_ |= 56;
  }
  // The buffered bits, the next the most significant.
  uint64_t Window() const { return buffer_; }
  void Skip(int bits) {
    buffer_ <<= bits;
    count_ -= bits;
  }
  bool Overran() const { return Used() > bits_; }
  // Less than a byte is left: what an encoder pads the data with.
  bool AtEnd() const { return Used() <= bits_ && bits_ - Used() < 8; }

 private:
  size_t Used() const { return 8 * static_cast<size_t>(next_ - start_) - count_; }

  const uint8_t* const start_;
  const uint8_t* next_;
  const size_t bits_;
  uint64_t buffer_ = 0;
  int count_ = 0;
};

// The symbol of the Huffman code at the start of `window` and the code's length in *length; -1 for a code the
// table does not have.
inline int Symbol(const HuffmanTable& table, uint64_t window, int* length) {
  const uint16_t entry = table.fast[window >> (64 - kFastBits)];
  if (entry != 0) {
    *length = entry >> 8;
    return entry & 0xFF;
  }
  for (int bits = kFastBits + 1; bits <= 16; ++bits) {
    const auto code = static_cast<int32_t>(window >> (64 - bits));
    if (code <= table.max_code[bits]) {
      *length = bits;
      return table.symbols[table.index_offset[bits] + code];
    }
  }
  return -1;
}

// A scan's entropy-coded bytes [begin, end) with each stuffed FF 00 made FF, and kPadding zero bytes after them.
// False on an FF followed by anything else (a restart marker: the plan has no restart interval).
bool Unstuff(const uint8_t* begin, const uint8_t* end, std::vector<uint8_t>* out) {
  out->resize(static_cast<size_t>(end - begin) + kPadding);
  uint8_t* to = out->data();
  while (begin < end) {
    const auto* ff = static_cast<const uint8_t*>(std::memchr(begin, 0xFF, end - begin));
    const uint8_t* run_end = ff == nullptr ? end : ff + 1;
    std::memcpy(to, begin, run_end - begin);
    to += run_end - begin;
    if (ff == nullptr) break;
    if (ff + 1 == end || ff[1] != 0x00) return false;
    begin = ff + 2;
  }
  std::memset(to, 0, kPadding);
  out->resize(static_cast<size_t>(to - out->data()) + kPadding);
  return true;
}

using Scan = SpectralPlan::Scan;
static_assert(std::tuple_size_v<decltype(Scan::index)> == kMaxComponents);

// A DC coefficient's difference: adds it to *prediction and stores that in block[0]. False on a bad code or a
// prediction out of int range (libjpeg's error).
inline bool DecodeDc(const HuffmanTable& table, BitReader* bits, int32_t* prediction, int16_t* block) {
  bits->Refill();
  const uint64_t window = bits->Window();
  int length;
  const int size = Symbol(table, window, &length);
  if (size < 0) return false;
  const int64_t value = int64_t{*prediction} + (size == 0 ? 0 : Extend(window << length, size));
  bits->Skip(length + size);
  if (value > INT32_MAX || value < INT32_MIN) return false;
  *prediction = static_cast<int32_t>(value);
  block[0] = static_cast<int16_t>(value);  // as libjpeg stores it (JCOEF)
  return true;
}

// The block rows of `component` that a scan decodes when only the first `mcu_rows` MCU rows are wanted.
int64_t BlockRowsOf(const SpectralPlan::Component& component, int64_t mcu_rows) {
  return std::min(component.height_in_blocks, mcu_rows * component.v);
}

bool DecodeDcScan(const Scan& scan, const SpectralPlan& plan, const std::array<HuffmanTable, 4>& tables,
                  const std::vector<BlockRows>& blocks, int64_t stride, int64_t mcu_rows, BitReader* bits) {
  std::array<int32_t, kMaxComponents> predictions{};
  if (scan.count == 1) {  // a component's own blocks in raster order
    const int c = scan.index[0];
    const SpectralPlan::Component& component = plan.components[c];
    const HuffmanTable& table = tables[scan.dc_table[0]];
    for (int64_t row = 0; row < BlockRowsOf(component, mcu_rows); ++row) {
      for (int64_t column = 0; column < component.width_in_blocks; ++column) {
        if (!DecodeDc(table, bits, &predictions[0], blocks[c][row] + stride * column) || bits->Overran()) return false;
      }
    }
    return true;
  }
  for (int64_t mcu_row = 0; mcu_row < mcu_rows; ++mcu_row) {  // interleaved: MCU by MCU
    for (int64_t mcu_column = 0; mcu_column < plan.mcus_per_row; ++mcu_column) {
      for (int i = 0; i < scan.count; ++i) {
        const SpectralPlan::Component& component = plan.components[scan.index[i]];
        const HuffmanTable& table = tables[scan.dc_table[i]];
        for (int v = 0; v < component.v; ++v) {
          int16_t* row = blocks[scan.index[i]][mcu_row * component.v + v];
          for (int h = 0; h < component.h; ++h) {
            if (!DecodeDc(table, bits, &predictions[i], row + stride * (mcu_column * component.h + h))) return false;
          }
        }
      }
      if (bits->Overran()) return false;
    }
  }
  return true;
}

// A band of one component's AC coefficients, with end-of-band runs across blocks (T.81 G.1.2.2).
bool DecodeAcScan(const Scan& scan, const SpectralPlan& plan, const HuffmanTable& table,
                  const std::vector<BlockRows>& blocks, int64_t mcu_rows, BitReader* bits) {
  const int c = scan.index[0];
  const SpectralPlan::Component& component = plan.components[c];
  uint32_t end_of_band_run = 0;  // blocks still to skip
  for (int64_t row = 0; row < BlockRowsOf(component, mcu_rows); ++row) {
    for (int64_t column = 0; column < component.width_in_blocks; ++column) {
      if (end_of_band_run > 0) {
        --end_of_band_run;
        continue;
      }
      int16_t* block = blocks[c][row] + 64 * column;
      for (int k = scan.first; k <= scan.last;) {
        bits->Refill();
        const uint64_t window = bits->Window();
        const int32_t fast = table.fast_ac[window >> (64 - kFastBits)];
        if (fast != 0) {
          k += (fast >> 8) & 15;
          if (k > scan.last) return false;
          block[kZigzagToNatural[k++]] = static_cast<int16_t>(fast >> 16);
          bits->Skip(fast & 0xFF);
          continue;
        }
        int length;
        const int symbol = Symbol(table, window, &length);
        if (symbol < 0) return false;
        const int run = symbol >> 4, size = symbol & 15;
        if (size != 0) {
          k += run;
          if (k > scan.last) return false;  // libjpeg would write it elsewhere in the block
          block[kZigzagToNatural[k++]] = static_cast<int16_t>(Extend(window << length, size));
          bits->Skip(length + size);
        } else if (run == 15) {  // sixteen zeros
          bits->Skip(length);
          k += 16;
        } else {  // the band ends here in this block and the next (2^run - 1 + run bits) blocks
          bits->Skip(length);
          end_of_band_run = (1u << run) - 1;
          if (run > 0) {
            end_of_band_run += static_cast<uint32_t>(bits->Window() >> (64 - run));
            bits->Skip(run);
          }
          break;
        }
      }
      if (bits->Overran()) return false;
    }
  }
  return true;
}

}  // namespace

bool PlanSpectralScans(const uint8_t* data, size_t size, SpectralPlan* plan) {
  *plan = SpectralPlan();
  std::array<uint64_t, kMaxComponents> coded{};  // by component: the zig-zag coefficients scanned, a bit each
  bool framed = false, scanning = false, supported = true, ended = false;
  const std::string error = WalkSegments(data, size, [&](const Segment& segment) {
    if (segment.code == kEoi) {
      ended = true;
      return false;
    }
    const uint8_t* fields = data + segment.offset + 4;
    const size_t length = segment.length;  // the fields are length - 2 bytes
    if (IsSof(segment.code)) {             // precision, height, width, count, then id, sampling factors, table of each
      const int count = length >= 8 ? fields[5] : 0;
      if (framed || segment.code != kSofProgressiveHuffman || count < 1 || count > kMaxComponents ||
          length != 8 + 3u * count || fields[0] != 8) {
        return supported = false;
      }
      const int64_t height = fields[1] << 8 | fields[2], width = fields[3] << 8 | fields[4];
      if (height == 0 || width == 0) return supported = false;  // a height from a DNL segment
      int h_max = 1, v_max = 1;
      for (int i = 0; i < count; ++i) {
        const uint8_t* field = fields + 6 + 3 * i;
        const int h = field[1] >> 4, v = field[1] & 15;
        if (h < 1 || h > 4 || v < 1 || v > 4) return supported = false;
        for (const SpectralPlan::Component& other : plan->components) {
          if (other.id == field[0]) return supported = false;
        }
        plan->components.push_back({field[0], h, v, 0, 0});
        h_max = std::max(h_max, h);
        v_max = std::max(v_max, v);
      }
      for (SpectralPlan::Component& component : plan->components) {  // as libjpeg's jdinput.c sizes them
        component.width_in_blocks = (width * component.h + 8 * h_max - 1) / (8 * h_max);
        component.height_in_blocks = (height * component.v + 8 * v_max - 1) / (8 * v_max);
      }
      plan->mcus_per_row = (width + 8 * h_max - 1) / (8 * h_max);
      plan->mcu_rows = (height + 8 * v_max - 1) / (8 * v_max);
      framed = true;
    } else if (segment.code == kDri) {
      if (length != 4 || (fields[0] | fields[1]) != 0) return supported = false;
    } else if (segment.code == kDht) {
      plan->steps.push_back({segment, {}});
    } else if (segment.code == kSos) {  // count, then id and tables of each, then Ss, Se, Ah/Al
      const int count = length >= 3 ? fields[0] : 0;
      if (!framed || count < 1 || count > kMaxComponents || length != 6 + 2u * count) return supported = false;
      const int first = fields[1 + 2 * count], last = fields[2 + 2 * count];
      const bool dc = first == 0;
      if (fields[3 + 2 * count] != 0 || (dc ? last != 0 : count != 1 || last < first || last > 63)) {
        return supported = false;
      }
      const uint64_t band = (~uint64_t{0} >> (63 - last)) & (~uint64_t{0} << first);
      Scan scan{count, {}, {}, {}, first, last};
      int blocks_in_mcu = 0;
      for (int i = 0; i < count; ++i) {
        const auto component =
            std::find_if(plan->components.begin(), plan->components.end(),
                         [&](const SpectralPlan::Component& c) { return c.id == fields[1 + 2 * i]; });
        if (component == plan->components.end()) return supported = false;
        scan.index[i] = static_cast<int>(component - plan->components.begin());
        scan.dc_table[i] = fields[2 + 2 * i] >> 4;
        scan.ac_table[i] = fields[2 + 2 * i] & 15;
        if ((dc ? scan.dc_table[i] : scan.ac_table[i]) >= 4) return supported = false;
        uint64_t& scanned = coded[scan.index[i]];
        if ((scanned & band) != 0 || (!dc && (scanned & 1) == 0)) return supported = false;
        scanned |= band;
        blocks_in_mcu += component->h * component->v;
      }
      if (count > 1 && blocks_in_mcu > kMaxBlocksInMcu) return supported = false;
      plan->steps.push_back({segment, scan});
      scanning = true;
    } else if (segment.code == 0xDC || segment.code == 0xCC) {  // DNL, DAC
      return supported = false;
    } else if (segment.code == kDqt && scanning) {
      // A quantisation table redefined between scans: libjpeg keeps, for each component, the one in force at its
      // first scan, which the decoder's caller cannot see (it reads the header's).
      return supported = false;
    }
    return true;
  });
  plan->complete = true;
  for (size_t c = 0; c < plan->components.size(); ++c) plan->complete = plan->complete && coded[c] == ~uint64_t{0};
  return ended && error.empty() && supported && framed;
}

bool DecodeSpectralScans(const uint8_t* data, const SpectralPlan& plan, const std::vector<BlockRows>& blocks,
                         int64_t block_stride, int64_t mcu_rows) {
  const bool whole = mcu_rows < 0 || mcu_rows >= plan.mcu_rows;
  if (whole) mcu_rows = plan.mcu_rows;
  std::array<HuffmanTable, 4> dc_tables, ac_tables;
  std::vector<uint8_t> unstuffed;
  for (const SpectralPlan::Step& step : plan.steps) {
    const Segment& segment = step.segment;
    if (segment.code == kDht) {
      if (!ReadTables(data + segment.offset + 4, segment.length - 2, &dc_tables, &ac_tables)) return false;
      continue;
    }
    const Scan& scan = step.scan;
    const bool dc = scan.first == 0;
    if (!dc && block_stride != 64) return false;  // AC coefficients need whole blocks
    for (int i = 0; i < scan.count; ++i) {
      // A table never defined: libjpeg-turbo substitutes T.81's typical tables (K.3).
      if (!(dc ? dc_tables[scan.dc_table[i]] : ac_tables[scan.ac_table[i]]).defined) return false;
    }
    if (!Unstuff(data + segment.offset + 2 + segment.length, data + segment.end, &unstuffed)) return false;
    BitReader bits(unstuffed.data(), unstuffed.size() - kPadding);
    const bool decoded = dc ? DecodeDcScan(scan, plan, dc_tables, blocks, block_stride, mcu_rows, &bits)
                            : DecodeAcScan(scan, plan, ac_tables[scan.ac_table[0]], blocks, mcu_rows, &bits);
    // Whole bytes left over: libjpeg would find them before the next marker and warn that data is lost. (A scan
    // decoded to a row above its end leaves the rest unread: the next scan starts at its own marker.)
    if (!decoded || (whole && !bits.AtEnd())) return false;
  }
  return true;
}

}  // namespace tfliquid::jpeg
