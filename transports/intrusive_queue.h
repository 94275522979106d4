// A FIFO of nodes linked through one of their own members (`next` unless told otherwise): the
// transports queue per-transfer state that lives in Xfer::scratch, so queueing allocates
// nothing, and a node can sit in two queues at once through two members.
#pragma once

namespace weft {

template <typename Node, Node* Node::*Next = &Node::next>
class IntrusiveQueue {
 public:
  bool empty() const { return head_ == nullptr; }
  Node* front() const { return head_; }
  void push(Node* node) {
    node->*Next = nullptr;
    if (tail_) {
      tail_->*Next = node;
    } else {
      head_ = node;
    }
    tail_ = node;
  }
  Node* pop() {
    Node* node = head_;
    head_ = node->*Next;
    if (head_ == nullptr) tail_ = nullptr;
    return node;
  }

 private:
  Node* head_ = nullptr;
  Node* tail_ = nullptr;
};

}  // namespace weft
