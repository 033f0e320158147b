// Umbrella header: everything a key-value store needs to embed replication.
#pragma once

#include "rdmarepl/core/error.h"
#include "rdmarepl/core/result.h"
#include "rdmarepl/replication/channel.h"
#include "rdmarepl/replication/channel_metrics.h"
#include "rdmarepl/replication/options.h"
#include "rdmarepl/replication/record.h"
#include "rdmarepl/replication/record_group.h"
#include "rdmarepl/replication/store.h"
#include "rdmarepl/replication/ticket.h"

namespace rdmarepl {
// The names a store uses, lifted to the top namespace.
using replication::AckMode;
using replication::AwayPolicy;
using replication::BatchStore;
using replication::ChannelOptions;
using replication::DurableStore;
using replication::GroupOp;
using replication::GroupStore;
using replication::HistogramField;
using replication::kHistogramFields;
using replication::kMetricFields;
using replication::MetricField;
using replication::MetricKind;
using replication::MetricsSnapshot;
using replication::Op;
using replication::PollingMode;
using replication::Record;
using replication::RecordGroup;
using replication::ReplicationChannel;
using replication::Role;
using replication::SnapshotReader;
using replication::SnapshotWriter;
using replication::Store;
using replication::Ticket;
using replication::TransportKind;
using replication::WriteResult;
using replication::WriteStatus;
}  // namespace rdmarepl
