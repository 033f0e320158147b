#include "transport/verbs/async_events.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "core/thread_name.h"
#include "rdmarepl/core/log.h"
#include "transport/verbs/device.h"

namespace rdmarepl::transport::verbs {

std::string_view to_string(ibv_event_type type) noexcept {
  switch (type) {
    case IBV_EVENT_CQ_ERR:
      return "IBV_EVENT_CQ_ERR";
    case IBV_EVENT_QP_FATAL:
      return "IBV_EVENT_QP_FATAL";
    case IBV_EVENT_QP_REQ_ERR:
      return "IBV_EVENT_QP_REQ_ERR";
    case IBV_EVENT_QP_ACCESS_ERR:
      return "IBV_EVENT_QP_ACCESS_ERR";
    case IBV_EVENT_COMM_EST:
      return "IBV_EVENT_COMM_EST";
    case IBV_EVENT_SQ_DRAINED:
      return "IBV_EVENT_SQ_DRAINED";
    case IBV_EVENT_PATH_MIG:
      return "IBV_EVENT_PATH_MIG";
    case IBV_EVENT_PATH_MIG_ERR:
      return "IBV_EVENT_PATH_MIG_ERR";
    case IBV_EVENT_DEVICE_FATAL:
      return "IBV_EVENT_DEVICE_FATAL";
    case IBV_EVENT_PORT_ACTIVE:
      return "IBV_EVENT_PORT_ACTIVE";
    case IBV_EVENT_PORT_ERR:
      return "IBV_EVENT_PORT_ERR";
    case IBV_EVENT_LID_CHANGE:
      return "IBV_EVENT_LID_CHANGE";
    case IBV_EVENT_PKEY_CHANGE:
      return "IBV_EVENT_PKEY_CHANGE";
    case IBV_EVENT_SM_CHANGE:
      return "IBV_EVENT_SM_CHANGE";
    case IBV_EVENT_SRQ_ERR:
      return "IBV_EVENT_SRQ_ERR";
    case IBV_EVENT_SRQ_LIMIT_REACHED:
      return "IBV_EVENT_SRQ_LIMIT_REACHED";
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      return "IBV_EVENT_QP_LAST_WQE_REACHED";
    case IBV_EVENT_CLIENT_REREGISTER:
      return "IBV_EVENT_CLIENT_REREGISTER";
    case IBV_EVENT_GID_CHANGE:
      return "IBV_EVENT_GID_CHANGE";
    case IBV_EVENT_WQ_FATAL:
      return "IBV_EVENT_WQ_FATAL";
  }
  return "IBV_EVENT_(unknown)";
}

bool is_fatal_qp_event(ibv_event_type type) noexcept {
  return type == IBV_EVENT_QP_FATAL || type == IBV_EVENT_QP_REQ_ERR ||
         type == IBV_EVENT_QP_ACCESS_ERR || type == IBV_EVENT_PATH_MIG_ERR;
}

Status AsyncEventMonitor::start(const Device& device) {
  device_ = &device;
  const int fd = device.context()->async_fd;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    return errno_error(errno, "fcntl(O_NONBLOCK) on the async event fd of " + device.name());
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_.valid()) return errno_error(errno, "eventfd for the async event reader");
  thread_ = std::thread([this] { run(); });
  return {};
}

void AsyncEventMonitor::stop() noexcept {
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof one);
  thread_.join();
}

void AsyncEventMonitor::run() noexcept {
  core::name_this_thread("rr-verbs-events");
  const int fd = device_->context()->async_fd;
  for (;;) {
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    const int n = ::poll(fds, 2, -1);
    if (n < 0 && errno != EINTR) {
      log::error(
          "verbs {}: polling for async events failed ({}); port and QP errors are now "
          "noticed only through completions",
          device_->name(), errno);
      return;
    }
    if (n > 0 && fds[1].revents != 0) return;
    ibv_async_event ev{};
    while (ibv_get_async_event(device_->context(), &ev) == 0) {
      handle(ev);
      ibv_ack_async_event(&ev);
    }
  }
}

void AsyncEventMonitor::handle(const ibv_async_event& ev) noexcept {
  events_.fetch_add(1, std::memory_order_acq_rel);
  const std::string_view what = to_string(ev.event_type);
  if (is_fatal_qp_event(ev.event_type)) {
    ibv_qp* qp = ev.element.qp;
    log::warn("verbs {}: QP {:#x}: {}; its connection fails and is reported to its owner",
              device_->name(), qp != nullptr ? qp->qp_num : 0u, what);
    if (qp != nullptr && qp->qp_context != nullptr) {
      auto* sink = static_cast<QpEventSink*>(qp->qp_context);
      int none = -1;
      sink->event.compare_exchange_strong(none, static_cast<int>(ev.event_type));
    }
    return;
  }
  switch (ev.event_type) {
    case IBV_EVENT_PORT_ERR:
      if (ev.element.port_num == device_->port()) port_errors_.fetch_add(1);
      log::warn(
          "verbs {}: port {} went down ({}); its connections fail and reconnect once the "
          "link is back (check the link: `ip link`, `ibv_devinfo`)",
          device_->name(), ev.element.port_num, what);
      break;
    case IBV_EVENT_PORT_ACTIVE:
      log::info("verbs {}: port {} is active again ({})", device_->name(), ev.element.port_num,
                what);
      break;
    case IBV_EVENT_DEVICE_FATAL:
      port_errors_.fetch_add(1);
      log::error(
          "verbs {}: {}: the device is unusable; check the HCA firmware and driver "
          "(dmesg), then restart",
          device_->name(), what);
      break;
    default:
      log::debug("verbs {}: async event {}", device_->name(), what);
      break;
  }
}

}  // namespace rdmarepl::transport::verbs
