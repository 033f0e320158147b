#include "rocksdb_store.h"

#include <fmt/format.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include <unistd.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rdmarepl/core/byte_order.h"

namespace rocksrepl {

using rdmarepl::Errc;
using rdmarepl::Error;
using rdmarepl::Op;
using rdmarepl::Record;
using rdmarepl::Status;

namespace {

std::string be64(uint64_t v) {
  std::string s(8, '\0');
  rdmarepl::store_be64(reinterpret_cast<std::byte*>(s.data()), v);
  return s;
}

uint64_t read_u64(rocksdb::DB& db, const std::string& key) {
  std::string v;
  const auto st = db.Get(rocksdb::ReadOptions(), key, &v);
  if (st.IsNotFound()) return 0;
  if (!st.ok() || v.size() != 8) RocksDbStore::die(st, "reading " + key.substr(1));
  return rdmarepl::load_be64(reinterpret_cast<const std::byte*>(v.data()));
}

}  // namespace

std::string meta_key(std::string_view what, uint32_t shard) {
  return fmt::format("{}rdmarepl/{}/{:05}", '\0', what, shard);
}

void RocksDbStore::die(const rocksdb::Status& st, std::string_view what) {
  std::fprintf(stderr, "rocksdb_replicated: RocksDB failed %.*s: %s\n",
               static_cast<int>(what.size()), what.data(), st.ToString().c_str());
  std::_Exit(70);
}

rdmarepl::Result<std::unique_ptr<RocksDbStore>> RocksDbStore::open(const std::string& path,
                                                                   uint32_t shards) {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  const auto st = rocksdb::DB::Open(opts, path, &raw);
  if (!st.ok())
    return Error(Errc::io_error, fmt::format("cannot open RocksDB at {}: {}; check the path and "
                                             "that no other process has it open",
                                             path, st.ToString()));
  return std::unique_ptr<RocksDbStore>(new RocksDbStore(std::unique_ptr<rocksdb::DB>(raw), shards));
}

RocksDbStore::RocksDbStore(std::unique_ptr<rocksdb::DB> db, uint32_t shards)
    : db_(std::move(db)), position_(shards), applied_(shards) {
  wo_.sync = false;
  wo_.disableWAL = false;
  for (uint32_t s = 0; s < shards; ++s) {
    position_[s].store(read_u64(*db_, meta_key("pos", s)));
    applied_[s] = read_u64(*db_, meta_key("count", s));
  }
}

void RocksDbStore::add_op(rocksdb::WriteBatch& wb, Op op, std::string_view key,
                          std::string_view value) {
  const auto st = op == Op::put ? wb.Put(key, value) : wb.Delete(key);
  if (!st.ok()) die(st, "building a write batch");
}

void RocksDbStore::commit(rocksdb::WriteBatch& wb, uint32_t shard, uint64_t seq, uint64_t n) {
  applied_[shard] += n;
  if (!wb.Put(meta_key("pos", shard), be64(seq)).ok() ||
      !wb.Put(meta_key("count", shard), be64(applied_[shard])).ok())
    die(rocksdb::Status::Aborted(), "adding the position to a write batch");
  const auto st = db_->Write(wo_, &wb);
  if (!st.ok()) die(st, "writing a batch");
  position_[shard].store(seq, std::memory_order_release);
  if (crash_after_ != 0 && seq >= crash_after_) {
    // The data and its position are in the database; the channel has not acknowledged it.
    std::fprintf(stderr, "rocksdb_replicated: crashing after seq %llu of shard %u\n",
                 static_cast<unsigned long long>(seq), shard);
    ::kill(::getpid(), SIGKILL);
  }
}

void RocksDbStore::apply(const Record& r) {
  rocksdb::WriteBatch wb;
  add_op(wb, r.op, r.key, r.value);
  commit(wb, r.shard, r.seq, 1);
}

void RocksDbStore::apply_group(const rdmarepl::RecordGroup& g) {
  rocksdb::WriteBatch wb;
  for (const Record& r : g) add_op(wb, r.op, r.key, r.value);
  commit(wb, g.shard(), g.last_seq(), g.size());
}

void RocksDbStore::apply_batch(const rdmarepl::RecordGroup& records) {
  rocksdb::WriteBatch wb;
  for (const Record& r : records) add_op(wb, r.op, r.key, r.value);
  commit(wb, records.shard(), records.last_seq(), records.size());
}

void RocksDbStore::apply_committed(std::span<const rdmarepl::GroupOp> ops,
                                   rdmarepl::Ticket ticket) {
  rocksdb::WriteBatch wb;
  for (const auto& op : ops) add_op(wb, op.op, op.key, op.value);
  commit(wb, ticket.shard, ticket.seq, ops.size());
}

uint64_t RocksDbStore::durable_seq(uint32_t shard) const {
  return position_[shard].load(std::memory_order_acquire);
}

uint64_t RocksDbStore::applied_count(uint32_t shard) const {
  return applied_[shard];
}

bool RocksDbStore::get(std::string_view key, std::string& out) {
  return db_->Get(rocksdb::ReadOptions(), rocksdb::Slice(key.data(), key.size()), &out).ok();
}

// Snapshot format: per entry u32 key length, u32 value length, key, value (big-endian
// lengths), every key of a RocksDB snapshot in key order, the metadata keys included.
Status RocksDbStore::snapshot(rdmarepl::SnapshotWriter& out) {
  const rocksdb::Snapshot* snap = db_->GetSnapshot();
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  Status st = rdmarepl::ok_status();
  for (it->SeekToFirst(); st.ok() && it->Valid(); it->Next()) {
    std::byte lens[8];
    rdmarepl::store_be32(lens, static_cast<uint32_t>(it->key().size()));
    rdmarepl::store_be32(lens + 4, static_cast<uint32_t>(it->value().size()));
    st = out.write(lens, sizeof lens);
    if (st.ok()) st = out.write(it->key().data(), it->key().size());
    if (st.ok()) st = out.write(it->value().data(), it->value().size());
  }
  if (st.ok() && !it->status().ok())
    st = Error(Errc::io_error, "RocksDB snapshot iterator: " + it->status().ToString());
  it.reset();
  db_->ReleaseSnapshot(snap);
  return st;
}

// Replaces the whole database with the snapshot's entries and the checkpoint's positions in
// one write batch.
Status RocksDbStore::restore(rdmarepl::SnapshotReader& in) {
  auto read = [&](void* p, size_t n) -> rdmarepl::Result<bool> {
    size_t got = 0;
    while (got < n) {
      auto r = in.read(static_cast<char*>(p) + got, n - got);
      if (!r.ok()) return std::move(r).error();
      if (*r == 0) {
        if (got == 0) return false;
        return Error(Errc::corrupt, "RocksDbStore snapshot is truncated");
      }
      got += *r;
    }
    return true;
  };
  rocksdb::WriteBatch wb;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) (void)wb.Delete(it->key());
  }
  for (;;) {
    std::byte lens[8];
    auto more = read(lens, sizeof lens);
    if (!more.ok()) return std::move(more).error();
    if (!*more) break;
    std::string k(rdmarepl::load_be32(lens), '\0'), v(rdmarepl::load_be32(lens + 4), '\0');
    auto r = read(k.data(), k.size());
    if (r.ok() && !v.empty()) r = read(v.data(), v.size());
    if (!r.ok()) return std::move(r).error();
    (void)wb.Put(k, v);
  }
  for (uint32_t s = 0; s < in.seqs().size() && s < position_.size(); ++s)
    (void)wb.Put(meta_key("pos", s), be64(in.seqs()[s]));
  const auto st = db_->Write(wo_, &wb);
  if (!st.ok()) return Error(Errc::io_error, "RocksDbStore restore: " + st.ToString());
  for (uint32_t s = 0; s < position_.size(); ++s) {
    position_[s].store(read_u64(*db_, meta_key("pos", s)));
    applied_[s] = read_u64(*db_, meta_key("count", s));
  }
  return rdmarepl::ok_status();
}

}  // namespace rocksrepl
