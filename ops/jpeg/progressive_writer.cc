#include "jpeg/progressive_writer.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

namespace tfliquid::jpeg {
namespace {

// libjpeg's messages for the failures this writer can meet (jerror.h).
constexpr char kBadCoefficient[] = "DCT coefficient out of range";
constexpr char kBadMcuSize[] = "Sampling factors too large for interleaved scan";
constexpr char kCodeLengthOverflow[] = "Huffman code size table overflow";
constexpr char kOutOfMemory[] = "Insufficient memory";

// Position in natural (row-major) order of the k-th coefficient in zigzag order (jpeg_natural_order).
constexpr uint8_t kNaturalOrder[64] = {0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,
                                       12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28,
                                       35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
                                       58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63};

constexpr int kMaxDcBits = 11;            // MAX_COEF_BITS + 1: DC differences of 8-bit data
constexpr int kMaxAcBits = 10;            // MAX_COEF_BITS
constexpr unsigned kMaxEobRun = 0x7FFF;   // jcphuff.c forces the run out here
constexpr int kMaxCorrectionBits = 1000;  // jcphuff.c's MAX_CORR_BITS
constexpr int kMaxBlocksInMcu = 10;       // C_MAX_BLOCKS_IN_MCU

int BitLength(unsigned value) { return value == 0 ? 0 : 32 - __builtin_clz(value); }

// ---- Output ----------------------------------------------------------------------------------------------

// A growable byte buffer that, unlike std::string::resize, does not zero what it reserves.
class ByteSink {
 public:
  // Room for `extra` more bytes; write them through the pointer, then Commit the end.
  uint8_t* Reserve(size_t extra) {
    if (size_ + extra > capacity_) {
      const size_t capacity = std::max(size_ + extra, 2 * capacity_);
      std::unique_ptr<uint8_t[]> bigger(new uint8_t[capacity]);
      if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
      data_ = std::move(bigger);
      capacity_ = capacity;
    }
    return data_.get() + size_;
  }
  void Commit(const uint8_t* end) { size_ = end - data_.get(); }

  void Byte(int value) {
    *Reserve(1) = static_cast<uint8_t>(value);
    ++size_;
  }
  void Word(int value) {
    Byte(value >> 8);
    Byte(value & 0xFF);
  }
  void Marker(int code) {
    Byte(0xFF);
    Byte(code);
  }
  void Bytes(const void* data, size_t size) {
    if (size > 0) std::memcpy(Reserve(size), data, size);
    size_ += size;
  }

  const char* data() const { return reinterpret_cast<const char*>(data_.get()); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// Entropy-coded data into memory that the caller has reserved (at most 8 bytes per Put: 32 bits, all 0xFF).
class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : out_(out) {}

  // Appends the low n <= 32 bits of `bits` (higher bits must be zero).
  void Put(uint32_t bits, int n) {
    acc_ = (acc_ << n) | bits;
    count_ += n;
    if (count_ >= 32) {
      count_ -= 32;
      Word(static_cast<uint32_t>(acc_ >> count_));
    }
  }

  // jcphuff.c's flush_bits: pad the last byte with ones, drop the padding that did not make a byte.
  uint8_t* Finish() {
    Put(0x7F, 7);
    for (; count_ >= 8; count_ -= 8) Byte(static_cast<uint8_t>(acc_ >> (count_ - 8)));
    return out_;
  }

 private:
  void Byte(uint8_t b) {
    *out_++ = b;
    if (b == 0xFF) *out_++ = 0;  // byte stuffing: 0xFF in entropy-coded data is followed by 0x00
  }

  void Word(uint32_t w) {
    const uint32_t inverted = ~w;
    if (((inverted - 0x01010101u) & ~inverted & 0x80808080u) == 0) {  // no 0xFF byte: no stuffing
      out_[0] = w >> 24;
      out_[1] = w >> 16;
      out_[2] = w >> 8;
      out_[3] = w;
      out_ += 4;
      return;
    }
    Byte(w >> 24);
    Byte(w >> 16);
    Byte(w >> 8);
    Byte(w);
  }

  uint8_t* out_;
  uint64_t acc_ = 0;  // pending bits in the low count_ bits
  int count_ = 0;
};

// ---- Huffman tables --------------------------------------------------------------------------------------

struct HuffmanTable {
  uint8_t bits[17];      // bits[l]: number of codes of length l
  uint8_t huffval[256];  // symbols by increasing code length
  int symbols;
  uint16_t code[256];  // by symbol, derived from bits/huffval as jpeg_make_c_derived_tbl does
  uint8_t size[256];
};

// Pops the symbol jpeg_gen_optimal_table's scans would pick: smallest frequency, ties to the larger symbol.
// (Its scans ignore frequencies above 10^9; a scan holds fewer symbols than that within the 1 GB budget.)
struct PickOrder {
  const long* freq;
  bool operator()(int a, int b) const { return freq[a] > freq[b] || (freq[a] == freq[b] && a < b); }
};

// jchuff.c's jpeg_gen_optimal_table (section K.2 of the standard), with a heap in place of its linear scans.
// freq[256] is the reserved pseudo-symbol that keeps any real code from being all ones. Clobbers freq.
bool GenOptimalTable(long freq[257], HuffmanTable* table) {
  constexpr int kMaxCodeLength = 32;
  int codesize[257] = {};
  int others[257];
  std::fill(others, others + 257, -1);
  freq[256] = 1;

  int heap[257];
  int heap_size = 0;
  for (int i = 0; i <= 256; ++i) {
    if (freq[i] != 0) heap[heap_size++] = i;
  }
  const PickOrder order{freq};
  std::make_heap(heap, heap + heap_size, order);
  auto pop = [&] {
    std::pop_heap(heap, heap + heap_size, order);
    return heap[--heap_size];
  };
  while (heap_size > 1) {
    int c1 = pop();
    int c2 = pop();
    freq[c1] += freq[c2];
    freq[c2] = 0;
    heap[heap_size++] = c1;
    std::push_heap(heap, heap + heap_size, order);
    // Both trees get one bit longer; c2's is chained onto c1's.
    ++codesize[c1];
    while (others[c1] >= 0) ++codesize[c1 = others[c1]];
    others[c1] = c2;
    ++codesize[c2];
    while (others[c2] >= 0) ++codesize[c2 = others[c2]];
  }

  uint8_t bits[kMaxCodeLength + 1] = {};
  for (int i = 0; i <= 256; ++i) {
    if (codesize[i] > kMaxCodeLength) return false;
    if (codesize[i] != 0) ++bits[codesize[i]];
  }
  uint8_t unadjusted[kMaxCodeLength + 1];
  std::memcpy(unadjusted, bits, sizeof(bits));
  --unadjusted[codesize[256]];  // the pseudo-symbol is not listed
  // JPEG limits codes to 16 bits: the standard's adjustment, as libjpeg does it.
  int i = kMaxCodeLength;
  for (; i > 16; --i) {
    while (bits[i] > 0) {
      int j = i - 2;
      while (bits[j] == 0) --j;
      bits[i] -= 2;
      ++bits[i - 1];
      bits[j + 1] += 2;
      --bits[j];
    }
  }
  while (bits[i] == 0) --i;
  --bits[i];  // drop the pseudo-symbol 256 from the longest codes
  std::memcpy(table->bits, bits, sizeof(table->bits));

  // Symbols by the unadjusted code length, then by value (as libjpeg does; the standard says this is fine):
  // a counting sort, from the lengths' counts before the adjustment.
  int start[kMaxCodeLength + 1];
  int p = 0;
  for (int length = 1; length <= kMaxCodeLength; ++length) {
    start[length] = p;
    p += unadjusted[length];
  }
  for (int symbol = 0; symbol <= 255; ++symbol) {
    if (codesize[symbol] != 0) table->huffval[start[codesize[symbol]]++] = static_cast<uint8_t>(symbol);
  }
  table->symbols = p;

  // Canonical codes (figures C.1 to C.3).
  std::memset(table->size, 0, sizeof(table->size));
  unsigned code = 0;
  p = 0;
  for (int length = 1; length <= 16; ++length, code <<= 1) {
    for (int n = 0; n < table->bits[length]; ++n, ++p, ++code) {
      table->code[table->huffval[p]] = static_cast<uint16_t>(code);
      table->size[table->huffval[p]] = static_cast<uint8_t>(length);
    }
  }
  return true;
}

// ---- Symbols ---------------------------------------------------------------------------------------------

// One buffered item of a scan: a Huffman symbol of table `table` followed by n extra bits, or (raw) n bits
// alone. Layout: symbol << 24 | table << 22 | raw << 21 | n << 16 | bits.
using Token = uint32_t;
constexpr Token kRaw = 1u << 21;

// The symbols of one scan and their frequencies per Huffman table slot.
struct SymbolBuffer {
  std::vector<Token> tokens;
  long freq[NUM_HUFF_TBLS][257];

  void Reset() {
    tokens.clear();
    std::memset(freq, 0, sizeof(freq));
  }
  void Symbol(int table, int symbol, uint32_t bits, int n) {
    ++freq[table][symbol];
    tokens.push_back(static_cast<Token>(symbol) << 24 | static_cast<Token>(table) << 22 | static_cast<Token>(n) << 16 |
                     bits);
  }
};

// Appends the last `count` bits of `bits` (at most 64) as raw tokens of up to 16 bits.
void AppendRawBits(uint64_t bits, int count, std::vector<Token>* tokens) {
  while (count > 0) {
    const int n = std::min(16, count);
    count -= n;
    tokens->push_back(kRaw | static_cast<Token>(n) << 16 | static_cast<Token>((bits >> count) & 0xFFFF));
  }
}

// Writes the buffered tokens with the scan's tables.
void EmitTokens(const std::vector<Token>& tokens, const HuffmanTable tables[], ByteSink* sink) {
  BitWriter writer(sink->Reserve(8 * tokens.size() + 8));
  for (const Token token : tokens) {
    const int n = (token >> 16) & 31;
    const uint32_t bits = token & 0xFFFF;
    if (token & kRaw) {
      writer.Put(bits, n);
    } else {
      const HuffmanTable& table = tables[(token >> 22) & 3];
      const int symbol = token >> 24;
      writer.Put(static_cast<uint32_t>(table.code[symbol]) << n | bits, table.size[symbol] + n);
    }
  }
  sink->Commit(writer.Finish());
}

// ---- Coefficients ----------------------------------------------------------------------------------------

// One component's coefficients in zigzag order, with a mask of the nonzero ones per block, so that AC scans
// visit only nonzero coefficients (typically a handful per block) in the order they are coded.
struct Plane {
  int width = 0;  // in blocks
  int height = 0;
  std::vector<int16_t> zigzag;    // 64 per block, blocks row-major
  std::vector<uint64_t> nonzero;  // bit k: zigzag[64 * block + k] != 0
};

void FillPlane(const JBLOCKROW* rows, int width, int height, Plane* plane) {
  plane->width = width;
  plane->height = height;
  plane->zigzag.resize(static_cast<size_t>(width) * height * 64);
  plane->nonzero.resize(static_cast<size_t>(width) * height);
  int16_t* z = plane->zigzag.data();
  uint64_t* mask = plane->nonzero.data();
  for (int row = 0; row < height; ++row) {
    for (int col = 0; col < width; ++col, z += 64) {
      const JCOEF* block = rows[row][col];
      uint64_t bits = 0;
      for (int k = 0; k < 64; ++k) {
        z[k] = block[kNaturalOrder[k]];
        bits |= static_cast<uint64_t>(z[k] != 0) << k;
      }
      *mask++ = bits;
    }
  }
}

// Calls visit(index in scan, DC coefficient) for every block of a DC scan in coding order. An interleaved
// scan codes whole MCUs: blocks past the component's edge are jctrans.c's dummy blocks, whose DC repeats the
// previous block's (always of the same component).
// jcmaster.c's limit on the blocks of an interleaved MCU.
bool McuFits(const jpeg_compress_struct& params, const jpeg_scan_info& scan) {
  int blocks = 0;
  for (int i = 0; i < scan.comps_in_scan; ++i) {
    const jpeg_component_info& comp = params.comp_info[scan.component_index[i]];
    blocks += comp.h_samp_factor * comp.v_samp_factor;
  }
  return scan.comps_in_scan == 1 || blocks <= kMaxBlocksInMcu;
}

template <typename Visit>
void ForEachDc(const jpeg_compress_struct& params, const jpeg_scan_info& scan, const Plane planes[], Visit visit) {
  if (scan.comps_in_scan == 1) {
    const Plane& plane = planes[scan.component_index[0]];
    const size_t blocks = static_cast<size_t>(plane.width) * plane.height;
    for (size_t b = 0; b < blocks; ++b) visit(0, plane.zigzag[64 * b]);
    return;
  }
  int max_h = 1, max_v = 1;
  for (int ci = 0; ci < params.num_components; ++ci) {
    max_h = std::max(max_h, params.comp_info[ci].h_samp_factor);
    max_v = std::max(max_v, params.comp_info[ci].v_samp_factor);
  }
  const int mcu_cols = (params.image_width + 8 * max_h - 1) / (8 * max_h);
  const int mcu_rows = (params.image_height + 8 * max_v - 1) / (8 * max_v);
  for (int mcu_row = 0; mcu_row < mcu_rows; ++mcu_row) {
    for (int mcu_col = 0; mcu_col < mcu_cols; ++mcu_col) {
      for (int i = 0; i < scan.comps_in_scan; ++i) {
        const int ci = scan.component_index[i];
        const int h = params.comp_info[ci].h_samp_factor, v = params.comp_info[ci].v_samp_factor;
        const Plane& plane = planes[ci];
        int dc = 0;
        for (int y = 0; y < v; ++y) {
          const int row = mcu_row * v + y;
          for (int x = 0; x < h; ++x) {
            const int col = mcu_col * h + x;
            if (row < plane.height && col < plane.width) {
              dc = plane.zigzag[64 * (static_cast<size_t>(row) * plane.width + col)];
            }
            visit(i, dc);
          }
        }
      }
    }
  }
}

// ---- Scans (jcphuff.c) -----------------------------------------------------------------------------------

// First DC scan: differences of the point-transformed DC values, one predictor per component.
bool DcFirst(const jpeg_compress_struct& params, const jpeg_scan_info& scan, const Plane planes[], SymbolBuffer* out) {
  int last[MAX_COMPS_IN_SCAN] = {};
  bool in_range = true;
  ForEachDc(params, scan, planes, [&](int i, int dc) {
    const int value = dc >> scan.Al;  // arithmetic shift, as IRIGHT_SHIFT
    const int diff = value - last[i];
    last[i] = value;
    const unsigned magnitude = diff < 0 ? -diff : diff;
    const int n = BitLength(magnitude);
    if (n > kMaxDcBits) in_range = false;
    // Negative values are sent as the complement of their magnitude.
    const uint32_t bits = (diff < 0 ? ~magnitude : magnitude) & ((1u << n) - 1);
    out->Symbol(params.comp_info[scan.component_index[i]].dc_tbl_no, n, bits, n);
  });
  return in_range;
}

// DC refinement: one raw bit per block and no Huffman table, so it is written directly.
void DcRefine(const jpeg_compress_struct& params, const jpeg_scan_info& scan, const Plane planes[], size_t max_blocks,
              ByteSink* sink) {
  BitWriter writer(sink->Reserve(max_blocks / 4 + 16));
  ForEachDc(params, scan, planes, [&](int, int dc) { writer.Put((dc >> scan.Al) & 1, 1); });
  sink->Commit(writer.Finish());
}

// Mask of zigzag positions Ss..Se.
uint64_t BandMask(const jpeg_scan_info& scan) {
  const uint64_t upto_se = scan.Se == 63 ? ~uint64_t{0} : (uint64_t{1} << (scan.Se + 1)) - 1;
  return upto_se & ~((uint64_t{1} << scan.Ss) - 1);
}

// The pending run of end-of-band blocks: symbol (log2 run) << 4 and the run's low bits.
void EmitEobRunSymbol(int table, unsigned* eobrun, SymbolBuffer* out) {
  if (*eobrun == 0) return;
  const int n = BitLength(*eobrun) - 1;
  out->Symbol(table, n << 4, *eobrun & ((1u << n) - 1), n);
  *eobrun = 0;
}

// First AC scan of a band: run/size symbols of the point-transformed coefficients (magnitude >> Al), ZRL for
// runs over 15, and runs of all-zero band ends merged into EOBRUN symbols.
bool AcFirst(const jpeg_scan_info& scan, int table, const Plane& plane, SymbolBuffer* out) {
  const uint64_t band = BandMask(scan);
  const size_t blocks = static_cast<size_t>(plane.width) * plane.height;
  unsigned eobrun = 0;
  for (size_t b = 0; b < blocks; ++b) {
    const int16_t* z = &plane.zigzag[64 * b];
    int last = scan.Ss - 1;  // last coded coefficient
    for (uint64_t m = plane.nonzero[b] & band; m != 0; m &= m - 1) {
      const int k = __builtin_ctzll(m);
      const int coef = z[k];
      const unsigned magnitude = static_cast<unsigned>(coef < 0 ? -coef : coef) >> scan.Al;
      if (magnitude == 0) continue;  // zero after the point transform
      EmitEobRunSymbol(table, &eobrun, out);
      int run = k - last - 1;
      for (; run > 15; run -= 16) out->Symbol(table, 0xF0, 0, 0);
      const int n = BitLength(magnitude);
      if (n > kMaxAcBits) return false;
      const uint32_t bits = (coef < 0 ? ~magnitude : magnitude) & ((1u << n) - 1);
      out->Symbol(table, run << 4 | n, bits, n);
      last = k;
    }
    if (last < scan.Se && ++eobrun == kMaxEobRun) EmitEobRunSymbol(table, &eobrun, out);
  }
  EmitEobRunSymbol(table, &eobrun, out);
  return true;
}

// AC refinement state: the EOBRUN and the correction bits that must follow its symbol (BE in jcphuff.c).
struct Refinement {
  explicit Refinement(int table) : table(table) {}

  const int table;
  unsigned eobrun = 0;
  int pending_bits = 0;
  std::vector<Token> pending;  // the bits as raw tokens

  void EmitEobRun(SymbolBuffer* out) {
    if (eobrun == 0) return;
    EmitEobRunSymbol(table, &eobrun, out);
    out->tokens.insert(out->tokens.end(), pending.begin(), pending.end());
    pending.clear();
    pending_bits = 0;
  }
};

// Correction bits of one block waiting for the next symbol (BR in jcphuff.c), at most one per coefficient.
struct CorrectionBits {
  uint64_t bits = 0;
  int count = 0;

  void Push(uint64_t bit) {
    bits = bits << 1 | bit;
    ++count;
  }
  void MoveTo(std::vector<Token>* tokens) {
    AppendRawBits(bits, count, tokens);
    bits = 0;
    count = 0;
  }
};

// Refinement of a band by one bit (G.1.2.3): newly nonzero coefficients (magnitude >> Al == 1) are coded as
// run/1 symbols with a sign bit; previously nonzero ones (> 1) contribute a correction bit, sent after the
// next symbol, or after the EOBRUN symbol that covers the block's end.
void AcRefineBlock(const jpeg_scan_info& scan, const int16_t* z, uint64_t nonzero, Refinement* state,
                   SymbolBuffer* out) {
  // Bit k of each mask, for the point-transformed magnitude: nonzero, 1 (newly nonzero), odd (the correction).
  uint64_t coded = 0, newly = 0, odd = 0;
  for (uint64_t m = nonzero; m != 0; m &= m - 1) {
    const int k = __builtin_ctzll(m);
    const int magnitude = std::abs(z[k]) >> scan.Al;
    coded |= static_cast<uint64_t>(magnitude != 0) << k;
    newly |= static_cast<uint64_t>(magnitude == 1) << k;
    odd |= static_cast<uint64_t>(magnitude & 1) << k;
  }
  // Last newly nonzero coefficient (jcphuff.c's EOB index, which is relative 0 when there is none).
  const int eob = newly != 0 ? 63 - __builtin_clzll(newly) : scan.Ss;
  CorrectionBits corrections;
  int run = 0;
  int last = scan.Ss - 1;
  for (uint64_t m = coded; m != 0; m &= m - 1) {
    const int k = __builtin_ctzll(m);
    run += k - last - 1;
    last = k;
    // ZRLs, unless the rest of the block can be folded into the EOB (no newly nonzero coefficient left).
    for (; run > 15 && k <= eob; run -= 16) {
      state->EmitEobRun(out);
      out->Symbol(state->table, 0xF0, 0, 0);
      corrections.MoveTo(&out->tokens);
    }
    if ((newly >> k & 1) == 0) {
      corrections.Push(odd >> k & 1);
      continue;
    }
    state->EmitEobRun(out);
    out->Symbol(state->table, run << 4 | 1, z[k] < 0 ? 0 : 1, 1);
    corrections.MoveTo(&out->tokens);
    run = 0;
  }
  if (run > 0 || last < scan.Se || corrections.count > 0) {
    ++state->eobrun;
    state->pending_bits += corrections.count;
    corrections.MoveTo(&state->pending);
    // Force the run out before its counter or the next block's correction bits could overflow.
    if (state->eobrun == kMaxEobRun || state->pending_bits > kMaxCorrectionBits - 64 + 1) {
      state->EmitEobRun(out);
    }
  }
}

void AcRefine(const jpeg_scan_info& scan, int table, const Plane& plane, SymbolBuffer* out) {
  const uint64_t band = BandMask(scan);
  const size_t blocks = static_cast<size_t>(plane.width) * plane.height;
  Refinement state(table);
  for (size_t b = 0; b < blocks; ++b) {
    AcRefineBlock(scan, &plane.zigzag[64 * b], plane.nonzero[b] & band, &state, out);
  }
  state.EmitEobRun(out);
}

// ---- Markers (jcmarker.c) --------------------------------------------------------------------------------

bool HasPrefix(const jpeg_saved_marker_ptr marker, const char* prefix, size_t length) {
  return marker->data_length >= length && std::memcmp(marker->data, prefix, length) == 0;
}

// SOI, the JFIF APP0 that libjpeg writes for the colour space, the Adobe APP14 (with the source's transform) when
// params asks for one, then the saved markers but the source's own JFIF/Adobe ones, which would duplicate them
// (transupp.c's jcopy_markers_execute).
void WriteFileHeader(const jpeg_decompress_struct& src, const jpeg_compress_struct& params, ByteSink* sink) {
  sink->Marker(0xD8);
  if (params.write_JFIF_header) {
    sink->Marker(JPEG_APP0);
    sink->Word(16);
    sink->Bytes("JFIF", 5);
    sink->Byte(params.JFIF_major_version);
    sink->Byte(params.JFIF_minor_version);
    sink->Byte(params.density_unit);
    sink->Word(params.X_density);
    sink->Word(params.Y_density);
    sink->Word(0);  // no thumbnail
  }
  if (params.write_Adobe_marker) {
    sink->Marker(JPEG_APP0 + 14);
    sink->Word(14);
    sink->Bytes("Adobe", 5);
    sink->Word(100);  // version
    sink->Word(0);    // flags
    sink->Word(0);
    sink->Byte(src.Adobe_transform);
  }
  for (jpeg_saved_marker_ptr marker = src.marker_list; marker != nullptr; marker = marker->next) {
    if (params.write_JFIF_header && marker->marker == JPEG_APP0 && HasPrefix(marker, "JFIF", 5)) continue;
    if (params.write_Adobe_marker && marker->marker == JPEG_APP0 + 14 && HasPrefix(marker, "Adobe", 5)) continue;
    sink->Marker(marker->marker);
    sink->Word(marker->data_length + 2);
    sink->Bytes(marker->data, marker->data_length);
  }
}

// DQT for each quantisation table in use (16-bit entries if any exceeds 255), then SOF2.
void WriteFrameHeader(const jpeg_compress_struct& params, ByteSink* sink) {
  bool sent[NUM_QUANT_TBLS] = {};
  for (int ci = 0; ci < params.num_components; ++ci) {
    const int index = params.comp_info[ci].quant_tbl_no;
    if (sent[index]) continue;
    sent[index] = true;
    const UINT16* values = params.quant_tbl_ptrs[index]->quantval;
    const bool wide = std::any_of(values, values + 64, [](UINT16 q) { return q > 255; });
    sink->Marker(0xDB);
    sink->Word(wide ? 2 * 64 + 3 : 64 + 3);
    sink->Byte(index | (wide ? 0x10 : 0));
    for (int k = 0; k < 64; ++k) {
      const unsigned q = values[kNaturalOrder[k]];
      if (wide) sink->Byte(q >> 8);
      sink->Byte(q & 0xFF);
    }
  }
  sink->Marker(0xC2);
  sink->Word(8 + 3 * params.num_components);
  sink->Byte(params.data_precision);
  sink->Word(params.image_height);
  sink->Word(params.image_width);
  sink->Byte(params.num_components);
  for (int ci = 0; ci < params.num_components; ++ci) {
    const jpeg_component_info& comp = params.comp_info[ci];
    sink->Byte(comp.component_id);
    sink->Byte(comp.h_samp_factor << 4 | comp.v_samp_factor);
    sink->Byte(comp.quant_tbl_no);
  }
}

void WriteHuffmanTable(int index, const HuffmanTable& table, ByteSink* sink) {
  sink->Marker(0xC4);
  sink->Word(2 + 1 + 16 + table.symbols);
  sink->Byte(index);
  sink->Bytes(table.bits + 1, 16);
  sink->Bytes(table.huffval, table.symbols);
}

void WriteScanHeader(const jpeg_compress_struct& params, const jpeg_scan_info& scan, ByteSink* sink) {
  sink->Marker(0xDA);
  sink->Word(6 + 2 * scan.comps_in_scan);
  sink->Byte(scan.comps_in_scan);
  for (int i = 0; i < scan.comps_in_scan; ++i) {
    const jpeg_component_info& comp = params.comp_info[scan.component_index[i]];
    sink->Byte(comp.component_id);
    // Unused table fields are 0, as libjpeg writes them.
    const int dc = scan.Ss == 0 && scan.Ah == 0 ? comp.dc_tbl_no : 0;
    const int ac = scan.Se != 0 ? comp.ac_tbl_no : 0;
    sink->Byte(dc << 4 | ac);
  }
  sink->Byte(scan.Ss);
  sink->Byte(scan.Se);
  sink->Byte(scan.Ah << 4 | scan.Al);
}

// A Huffman-coded scan: optimal tables for the slots it used (each table once, DHT in component order as
// write_scan_header emits them), SOS, data.
bool WriteCodedScan(const jpeg_compress_struct& params, const jpeg_scan_info& scan, SymbolBuffer* symbols,
                    ByteSink* sink) {
  const bool is_dc = scan.Ss == 0;
  HuffmanTable tables[NUM_HUFF_TBLS];
  bool built[NUM_HUFF_TBLS] = {};
  for (int i = 0; i < scan.comps_in_scan; ++i) {
    const jpeg_component_info& comp = params.comp_info[scan.component_index[i]];
    const int slot = is_dc ? comp.dc_tbl_no : comp.ac_tbl_no;
    if (built[slot]) continue;
    built[slot] = true;
    if (!GenOptimalTable(symbols->freq[slot], &tables[slot])) return false;
    WriteHuffmanTable(is_dc ? slot : slot | 0x10, tables[slot], sink);
  }
  WriteScanHeader(params, scan, sink);
  EmitTokens(symbols->tokens, tables, sink);
  return true;
}

// Every scan of the script; *error names what failed.
bool WriteScans(const jpeg_compress_struct& params, const Plane planes[], ByteSink* sink, const char** error) {
  size_t max_blocks = 0;
  for (int ci = 0; ci < params.num_components; ++ci) max_blocks += planes[ci].nonzero.size();
  max_blocks *= 2;  // interleaved scans add dummy blocks: fewer than the real ones
  SymbolBuffer symbols;
  for (int s = 0; s < params.num_scans; ++s) {
    const jpeg_scan_info& scan = params.scan_info[s];
    if (!McuFits(params, scan)) return *error = kBadMcuSize, false;
    if (scan.Ss == 0 && scan.Ah != 0) {
      WriteScanHeader(params, scan, sink);
      DcRefine(params, scan, planes, max_blocks, sink);
      continue;
    }
    symbols.Reset();
    if (scan.Ss == 0) {
      if (!DcFirst(params, scan, planes, &symbols)) return *error = kBadCoefficient, false;
    } else {
      const int ci = scan.component_index[0];
      const int table = params.comp_info[ci].ac_tbl_no;
      if (scan.Ah == 0) {
        if (!AcFirst(scan, table, planes[ci], &symbols)) return *error = kBadCoefficient, false;
      } else {
        AcRefine(scan, table, planes[ci], &symbols);
      }
    }
    if (!WriteCodedScan(params, scan, &symbols, sink)) return *error = kCodeLengthOverflow, false;
  }
  return true;
}

}  // namespace

bool WriteProgressive(const jpeg_decompress_struct& src, const JBLOCKROW* const rows[],
                      const jpeg_compress_struct& params, std::string* out, std::string* error) {
  try {
    std::vector<Plane> planes(params.num_components);
    for (int ci = 0; ci < params.num_components; ++ci) {
      const jpeg_component_info& comp = src.comp_info[ci];
      FillPlane(rows[ci], comp.width_in_blocks, comp.height_in_blocks, &planes[ci]);
    }
    ByteSink sink;
    WriteFileHeader(src, params, &sink);
    WriteFrameHeader(params, &sink);
    const char* message = nullptr;
    if (!WriteScans(params, planes.data(), &sink, &message)) {
      *error = message;
      return false;
    }
    sink.Marker(0xD9);
    out->assign(sink.data(), sink.size());
    return true;
  } catch (const std::bad_alloc&) {
    *error = kOutOfMemory;
    return false;
  }
}

}  // namespace tfliquid::jpeg
