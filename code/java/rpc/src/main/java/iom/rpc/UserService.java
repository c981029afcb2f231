package iom.rpc;

/** The one service every provider serves: look a user up by id. */
public interface UserService {
    User findById(int id);
}
